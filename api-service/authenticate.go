package apiservice

import (
	"errors"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/authtoken"
	"github.com/ferricbm/ferric/api-service/policy"
	"github.com/ferricbm/ferric/pkg/errs"
)

const (
	headerAuthToken    = "X-Auth-Token"
	headerServiceToken = "X-Service-Token"

	// keyCredentials holds the *policy.Credentials of the request.
	keyCredentials = "ferric.credentials"
	// keyPolicyTarget holds the policy.Target of a project-scoped
	// request on a node.
	keyPolicyTarget    = "ferric.policy_target"
	keyRamdiskCallback = "ferric.ramdisk_callback"
	keyUser            = "ferric.user"
)

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
