package apiservice

import (
	"context"
	"mime"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/api-service/microversion"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/rpc"
)

const (
	headerRequestID       = "Openstack-Request-Id"
	headerLegacyRequestID = "X-Openstack-Request-Id"

	keyRequestID = "ferric.request_id"
	keyVersion   = "ferric.version"
	keyBodyLimit = "ferric.body_limit"
	// keyStrippedJSON marks a request whose ".json" suffix was dropped.
	keyStrippedJSON = "ferric.stripped_json"
	jsonSuffix      = ".json"

	// provisionBodyLimit allows large config drives.
	provisionBodyLimit = 64 << 20
)

// requestID names every request req-<uuid4> in both response headers, the
// request context (so RPC carries it to the conductor) and the logs.
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
		c.SetRequest(r.WithContext(rpc.WithRequestID(context.WithoutCancel(r.Context()), id)))
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
		r := accessRecord{requestID: id, method: c.Request().Method, path: c.Request().URL.Path,
			status: c.Response().Status, duration: time.Since(start)}
		if s.access != nil {
			s.access.write(r, time.Now())
			return nil
		}
		s.log.WithFields(logrus.Fields{
			"request_id": r.requestID,
			"method":     r.method,
			"path":       r.path,
			"status":     r.status,
			"duration":   r.duration.String(),
		}).Info(accessMessage)
		return nil
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
	if p != "/" && p != "/v1" && !strings.HasPrefix(p, "/v1/") && !isHealthProbe(p) {
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

// authenticate enforces http_basic on every route but the public ones and
// the ramdisk's callbacks.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.users == nil || isPublic(c.Request().URL.Path) || isRamdiskCallback(c.Request()) {
			return next(c)
		}
		user, msg, ok := s.users.Authenticate(c.Request().Header.Get("Authorization"))
		if !ok {
			return &authError{message: msg}
		}
		c.Set("ferric.user", user)
		return next(c)
	}
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
// drives, everything else the configured maximum.
func (s *Server) bodyLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		limit := s.cfg.API.MaxRequestBodySize
		if limit <= 0 {
			limit = 1 << 20
		}
		if strings.HasSuffix(c.Request().URL.Path, "/states/provision") {
			limit = provisionBodyLimit
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

// limitQuery refuses a query string net/url would not parse whole.
func limitQuery(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if n := strings.Count(c.Request().URL.RawQuery, "&") + 1; n > maxQueryParams {
			return errs.New(errs.KindInvalid, "The query string has %d parameters; at most %d are allowed.", n, maxQueryParams)
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
