package apiservice

import (
	"context"
	"errors"
	"math"
	"mime"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/api-service/authtoken"
	"github.com/ferricbm/ferric/api-service/policy"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/metrics"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/rpc"
)

const (
	headerRequestID       = "Openstack-Request-Id"
	headerLegacyRequestID = "X-Openstack-Request-Id"

	headerAuthToken    = "X-Auth-Token"
	headerServiceToken = "X-Service-Token"

	keyRequestID       = "ferric.request_id"
	keyGlobalRequestID = "ferric.global_request_id"
	// keyCredentials holds the *policy.Credentials of the request.
	keyCredentials = "ferric.credentials"
	// keyPolicyTarget holds the policy.Target of a project-scoped
	// request on a node.
	keyPolicyTarget    = "ferric.policy_target"
	keyRamdiskCallback = "ferric.ramdisk_callback"
	keyUser            = "ferric.user"
	keyVersion         = "ferric.version"
	keyBodyLimit       = "ferric.body_limit"
	// keyStrippedJSON marks a request whose ".json" suffix was dropped.
	keyStrippedJSON = "ferric.stripped_json"
	jsonSuffix      = ".json"

	// provisionBodyLimit allows large config drives.
	provisionBodyLimit = 64 << 20
	// ramdiskBodyLimit bounds what anyone may send without credentials:
	// a heartbeat (a URL, a token, a version and a CA certificate) or a
	// deploy callback is a few kilobytes.
	ramdiskBodyLimit = 64 << 10
)

// requestID names every request with a fresh req-<uuid4> in both response
// headers, the request context (so RPC carries it to the conductor) and
// the logs. A caller's own id in X-Openstack-Request-Id ("req-" and a
// UUID) is kept beside it as the global request id, as Ironic does, so
// the caller's logs and Ferric's can be joined; anything else there is
// ignored. The local id is always Ferric's own: a caller choosing it could
// make its requests' lines indistinguishable from another's.
//
// The context handed on is not cancelled when the client goes away: a
// request runs to its end, as in Ironic, bounded by the RPC timeout. A
// cancellable context would cost every SQL statement a goroutine in
// database/sql and two hand-offs to the MySQL driver's watcher, a large
// share of a node GET on two cores.
func (s *Server) requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := "req-" + uuid.NewString()
		c.Set(keyRequestID, id)
		h := c.Response().Header()
		h.Set(headerRequestID, id)
		h.Set(headerLegacyRequestID, id)
		r := c.Request()
		ctx := rpc.WithRequestID(context.WithoutCancel(r.Context()), id)
		if global := r.Header.Get(headerLegacyRequestID); logging.ValidRequestID(global) {
			c.Set(keyGlobalRequestID, global)
			ctx = logging.ContextWithGlobalRequestID(ctx, global)
		}
		c.SetRequest(r.WithContext(ctx))
		return next(c)
	}
}

func (s *Server) accessLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		if !s.log.IsLevelEnabled(logrus.InfoLevel) {
			return nil
		}
		id, _ := c.Get(keyRequestID).(string)
		global, _ := c.Get(keyGlobalRequestID).(string)
		r := accessRecord{requestID: id, globalRequestID: global, method: metrics.Method(c.Request().Method), path: c.Request().URL.Path,
			status: c.Response().Status, duration: time.Since(start)}
		if s.access != nil {
			s.access.write(r, time.Now())
			return nil
		}
		s.log.WithFields(r.fields()).Info(accessMessage)
		return nil
	}
}

// knownMethod answers 405 to a method the API serves on no route before
// any other work: its name is client-chosen text of any length.
func knownMethod(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !metrics.KnownMethod(c.Request().Method) {
			return &routingError{code: http.StatusMethodNotAllowed, description: "The method is not allowed for the requested URL."}
		}
		return next(c)
	}
}

// normalizePath routes paths without the /v1 prefix as if it were there
// (bookmark links omit it) and ignores a trailing slash.
func normalizePath(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		u := c.Request().URL
		u.Path = normalize(u.Path)
		if u.RawPath != "" {
			u.RawPath = normalize(u.RawPath)
		}
		return next(c)
	}
}

func normalize(p string) string {
	if len(p) > 1 {
		p = strings.TrimRight(p, "/")
		if p == "" {
			p = "/"
		}
	}
	if p != "/" && p != "/v1" && !strings.HasPrefix(p, "/v1/") && !isHealthProbe(p) && p != metricsPath {
		p = "/v1" + p
	}
	return p
}

// isPublic reports whether a (normalised) path is served without
// authentication: discovery and the ramdisk's endpoints.
func isPublic(path string) bool {
	switch {
	case path == "/", path == "/v1", path == "/v1/lookup", isHealthProbe(path):
		return true
	case strings.HasPrefix(path, "/v1/heartbeat/"):
		return !strings.Contains(strings.TrimPrefix(path, "/v1/heartbeat/"), "/")
	}
	return false
}

// ramdiskCallbacks are the vendor methods a deploy ramdisk calls back
// with. The ramdisk has no API credentials; the one-time deploy key in
// the body is what the conductor checks instead, as Ironic exempts them.
var ramdiskCallbacks = map[string]bool{"pass_deploy_info": true, "pass_bootloader_install_info": true}

// isRamdiskCallback reports whether r is a ramdisk's POST to one of those
// methods, in either the ?method= or the /vendor_passthru/<method> form.
func isRamdiskCallback(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/v1/nodes/"), "/")
	switch {
	case !strings.HasPrefix(r.URL.Path, "/v1/nodes/") || parts[0] == "" || len(parts) < 2 || parts[1] != "vendor_passthru":
		return false
	case len(parts) == 2:
		return ramdiskCallbacks[r.URL.Query().Get("method")]
	case len(parts) == 3:
		return ramdiskCallbacks[parts[2]]
	}
	return false
}

// authenticate establishes who sends a request: with noauth and
// http_basic every (authenticated) user is an admin; with keystone the
// token's roles and scope are the credentials the policy rules check. The
// public routes pass with no credentials (their rules, if any, decide);
// the ramdisk's callbacks pass without any check, their deploy key is
// what the conductor checks instead.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		switch {
		case isRamdiskCallback(r):
			c.Set(keyRamdiskCallback, true)
			return next(c)
		case s.users == nil && s.tokens == nil:
			c.Set(keyCredentials, &adminCredentials)
			return next(c)
		case isPublic(r.URL.Path), s.isPublicMetrics(r.URL.Path):
			c.Set(keyCredentials, &noCredentials)
			return next(c)
		case s.tokens != nil:
			id, err := s.tokens.Authenticate(r.Context(), r.Header.Get(headerAuthToken), r.Header.Get(headerServiceToken))
			if errors.Is(err, authtoken.ErrUnauthorized) {
				return &authError{message: "The request you have made requires authentication.", title: "Unauthorized",
					challenge: s.wwwAuthenticate}
			}
			if err != nil {
				// handleError logs the cause, throttled.
				e := errs.New(errs.KindTemporaryFailure, "The Keystone service is temporarily unavailable.")
				e.Err = err
				return e
			}
			c.Set(keyCredentials, &policy.Credentials{Roles: id.Roles, SystemScope: id.SystemScope,
				ProjectID: id.ProjectID, ProjectName: id.ProjectName})
			return next(c)
		}
		user, refused := s.users.Authenticate(r.Header.Get("Authorization"), peerHost(r))
		if refused != nil && refused.RetryAfter > 0 {
			c.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(refused.RetryAfter.Seconds()))))
			return errs.New(errs.KindNotAuthorized, "%s.", refused.Message).WithStatus(http.StatusTooManyRequests)
		}
		if refused != nil {
			return &authError{message: refused.Message, challenge: `Basic realm="Baremetal API"`}
		}
		c.Set(keyUser, user)
		c.Set(keyCredentials, &adminCredentials)
		return next(c)
	}
}

// peerHost is the address of the connection's peer: the client, or the
// proxy in front of it. Headers naming another are not trusted.
func peerHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// adminCredentials are those of every user of noauth and http_basic;
// noCredentials those of a request to a public route. Both are read only.
var (
	adminCredentials = policy.Credentials{Roles: []string{"admin", "member", "reader"}, SystemScope: "all"}
	noCredentials    = policy.Credentials{}
)

// rule gates a route by a policy rule; the route table names one for
// every route but API discovery. The ramdisk's callbacks are exempt.
func (s *Server) rule(name string) echo.MiddlewareFunc {
	if !s.policy.Known(name) {
		s.unknownRules = append(s.unknownRules, name)
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if err := s.nodeTarget(c); err != nil {
				return err
			}
			if err := s.authorize(c, name); err != nil {
				return err
			}
			return next(c)
		}
	}
}

// nodeTarget makes the node a route names the policy target of a
// project-scoped token: its owner and lessee, which the project rules
// compare with the token's project. A node the project may not even read
// is not found, as in Ironic, so that other projects' nodes stay unseen.
// System-scoped credentials need no target.
func (s *Server) nodeTarget(c echo.Context) error {
	id, creds := c.Param("node"), credentials(c)
	if id == "" || creds.ProjectID == "" || c.Get(keyRamdiskCallback) != nil {
		return nil
	}
	n, err := s.findNode(c, id)
	if err != nil {
		return err
	}
	t := nodePolicyTarget(n)
	if !s.policy.Allowed("baremetal:node:get", creds, t) {
		return errs.NodeNotFound(id)
	}
	c.Set(keyPolicyTarget, t)
	return nil
}

// authorize checks the request's credentials against a rule, for rules
// that depend on more than the route (a PATCH of a node's driver_info).
func (s *Server) authorize(c echo.Context, rule string) error {
	if c.Get(keyRamdiskCallback) != nil {
		return nil
	}
	t, _ := c.Get(keyPolicyTarget).(policy.Target)
	return s.policy.Authorize(rule, credentials(c), t)
}

// credentials are the request's, none when it was not authenticated.
func credentials(c echo.Context) policy.Credentials {
	if creds, ok := c.Get(keyCredentials).(*policy.Credentials); ok {
		return *creds
	}
	return noCredentials
}

// listProject is the project whose nodes a list shows, nil when the
// credentials may list every node (baremetal:node:list_all).
func (s *Server) listProject(c echo.Context) (*string, error) {
	creds := credentials(c)
	if s.policy.Allowed("baremetal:node:list_all", creds, nil) {
		return nil, nil
	}
	if creds.ProjectID == "" {
		return nil, s.policy.Authorize("baremetal:node:list_all", creds, nil)
	}
	return &creds.ProjectID, nil
}

// acceptJSON refuses requests that accept no JSON representation.
func acceptJSON(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		accept := c.Request().Header.Values("Accept")
		if len(accept) == 0 || acceptsJSON(strings.Join(accept, ",")) {
			return next(c)
		}
		return &routingError{code: http.StatusNotAcceptable, description: "The server could not comply with the request since it is either malformed or otherwise incorrect."}
	}
}

func acceptsJSON(header string) bool {
	if strings.TrimSpace(header) == "" {
		return true
	}
	for _, item := range strings.Split(header, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(item))
		if err != nil {
			continue
		}
		if params["q"] == "0" || params["q"] == "0.0" {
			continue
		}
		switch {
		case mt == "*/*", mt == "application/*", mt == "application/json", strings.HasSuffix(mt, "+json"):
			return true
		}
	}
	return false
}

// negotiate fixes the request's microversion and emits the version headers
// (docs/api.md §1.1-1.2).
func negotiate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		v, rangeKnown, err := microversion.Negotiate(c.Request().Header)
		h := c.Response().Header()
		if rangeKnown {
			microversion.SetRange(h)
		}
		if err != nil {
			if c.Request().URL.Path == "/" {
				return err
			}
			return &routingError{code: http.StatusNotAcceptable, description: err.Message}
		}
		microversion.SetVersion(h, v)
		c.Set(keyVersion, v)
		if u := c.Request().URL; microversion.StripsJSONSuffix(c.Request().Header, v) && strings.HasSuffix(u.Path, jsonSuffix) {
			u.Path = strings.TrimSuffix(u.Path, jsonSuffix)
			u.RawPath = strings.TrimSuffix(u.RawPath, jsonSuffix)
			c.Set(keyStrippedJSON, true)
		}
		return next(c)
	}
}

// bodyLimit picks the request body limit: provisioning carries config
// drives, the ramdisk's unauthenticated routes a few fields, everything
// else the configured maximum. A declared length past it is refused
// before anything is read.
func (s *Server) bodyLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		limit := s.cfg.API.MaxRequestBodySize
		if limit <= 0 {
			limit = 1 << 20
		}
		switch p := c.Request().URL.Path; {
		case strings.HasSuffix(p, "/states/provision"):
			limit = provisionBodyLimit
		case c.Get(keyRamdiskCallback) != nil, strings.HasPrefix(p, "/v1/heartbeat/"):
			limit = min(limit, ramdiskBodyLimit)
		}
		c.Set(keyBodyLimit, limit)
		if c.Request().ContentLength > limit {
			return tooLarge(limit)
		}
		return next(c)
	}
}

// maxQueryParams is net/url's limit: past it, url.ParseQuery returns no
// parameter at all, so a request would silently lose every filter and
// list everything.
const maxQueryParams = 10000

// limitQuery refuses a query string net/url would not parse whole: past
// its parameter limit, or with a pair it cannot decode (a ';' separator, a
// bad %-escape), which it would drop silently, filter and all.
func limitQuery(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		raw := c.Request().URL.RawQuery
		if n := strings.Count(raw, "&") + 1; n > maxQueryParams {
			return errs.New(errs.KindInvalid, "The query string has %d parameters; at most %d are allowed.", n, maxQueryParams)
		}
		if _, err := url.ParseQuery(raw); err != nil {
			return errs.New(errs.KindInvalid, "The query string cannot be parsed: %s.", err)
		}
		return next(c)
	}
}

// requireJSONBody refuses a body that is not declared JSON with 415: a
// browser sends a cross-site POST without asking first only with a
// text/plain, form or multipart body. A request without a body needs no
// Content-Type.
func requireJSONBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
			return next(c)
		}
		if mt, _, err := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType)); err != nil || mt != echo.MIMEApplicationJSON {
			return &routingError{code: http.StatusUnsupportedMediaType,
				description: "The request body must be JSON, sent with Content-Type: application/json."}
		}
		return next(c)
	}
}

// recoverPanic turns a panicking handler into a 500 in Ironic's format;
// the log (masked like every entry) keeps the value and the stack.
func (s *Server) recoverPanic(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.WithField("request_id", c.Get(keyRequestID)).WithField("stack", string(debug.Stack())).
					Errorf("request handler panicked: %v", p)
				err = errs.New(errs.KindInternal, "An internal error occurred.")
			}
		}()
		return next(c)
	}
}

func version(c echo.Context) microversion.Version {
	if v, ok := c.Get(keyVersion).(microversion.Version); ok {
		return v
	}
	return microversion.Min
}
