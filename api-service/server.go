// Package apiservice is Ferric's Bare Metal API v1 HTTP service: an echo
// server whose middleware negotiates microversions, authenticates, limits
// bodies and renders every failure in Ironic's error format, and whose
// thin handlers delegate to the nodes, ports, query and present packages,
// read from the database and send changes to conductors over RPC.
package apiservice

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/api-service/auth"
	"github.com/ferricbm/ferric/api-service/authtoken"
	"github.com/ferricbm/ferric/api-service/policy"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/hashring"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/metrics"
	"github.com/ferricbm/ferric/rpc"
)

// Options are the dependencies of a Server.
type Options struct {
	Config config.Config
	Store  *db.Store
	RPC    *rpc.Client
	Log    *logrus.Logger
}

// Server is the API service.
type Server struct {
	cfg    config.Config
	store  *db.Store
	rpc    *rpc.Client
	log    *logrus.Logger
	access *accessWriter
	ring   *hashring.Manager
	users  *auth.Authenticator
	// tokens validates Keystone tokens (auth_strategy keystone); nil
	// otherwise, when every authenticated request acts as an admin.
	tokens *authtoken.Validator
	// wwwAuthenticate is the header a 401 sends with Keystone auth.
	wwwAuthenticate string
	policy          *policy.Enforcer
	echo            *echo.Echo
	// largeBodies are the slots of large provisioning bodies being read
	// ([api] max_concurrent_large_bodies).
	largeBodies *largeBodies
	metrics     *metrics.API
	// refusals throttles the warnings of designed 503s.
	refusals *logging.Throttle
	// unknownRules collects the rules the route table names that the
	// policy does not define, to fail New.
	unknownRules []string
}

// New builds the server and its routes; it does not listen yet.
func New(opts Options) (*Server, error) {
	if opts.Store == nil || opts.RPC == nil {
		return nil, errors.New("api service: Store and RPC are required")
	}
	log := opts.Log
	if log == nil {
		log = logging.Discard()
	}
	s := &Server{cfg: opts.Config, store: opts.Store, rpc: opts.RPC, log: log, access: newAccessWriter(log),
		largeBodies: newLargeBodies(opts.Config.API.MaxConcurrentLargeBodies), metrics: metrics.NewAPI(),
		refusals: logging.NewThrottle(refusalLogInterval)}
	switch opts.Config.Default.AuthStrategy {
	case "", "noauth":
	case "http_basic":
		users, err := auth.LoadHtpasswd(opts.Config.API.HTTPBasicAuthUserFile)
		if err != nil {
			return nil, fmt.Errorf("api service: http_basic auth: %w", err)
		}
		if s.users, err = auth.NewAuthenticator(users); err != nil {
			return nil, fmt.Errorf("api service: http_basic auth: %w", err)
		}
	case "keystone":
		ks := opts.Config.KeystoneAuthtoken
		s.tokens = authtoken.New(authtoken.Options{AuthURL: ks.AuthURL, Username: ks.Username, Password: ks.Password,
			UserDomainName: ks.UserDomainName, ProjectName: ks.ProjectName, ProjectDomainName: ks.ProjectDomainName,
			CacheTime: ks.TokenCacheTime, CacheSize: ks.TokenCacheSize, Timeout: ks.HTTPTimeout,
			ServiceTokenRoles: ks.ServiceTokenRoles})
		uri := ks.WWWAuthenticateURI
		if uri == "" {
			uri = ks.AuthURL
		}
		s.wwwAuthenticate = `Keystone uri="` + uri + `"`
	default:
		return nil, fmt.Errorf("api service: unknown auth_strategy %q", opts.Config.Default.AuthStrategy)
	}
	if s.users != nil || s.tokens != nil {
		if opts.Config.API.PublicEndpoint == "" {
			// Links then carry whatever Host a client sent: behind a load
			// balancer, a client could point other clients' links anywhere.
			log.Warn("[api] public_endpoint is not set: links in responses name the Host header each client sends; set it to the API's public URL")
		}
	}
	var err error
	if s.policy, err = policy.Load(opts.Config.OsloPolicy.PolicyFile,
		policy.Options{Legacy: !opts.Config.OsloPolicy.EnforceNewDefaults}); err != nil {
		return nil, fmt.Errorf("api service: %w", err)
	}
	timeout := opts.Config.Conductor.HeartbeatTimeout
	s.ring = hashring.NewManager(func(ctx context.Context) ([]hashring.Member, error) {
		return s.store.ActiveMembers(ctx, timeout)
	}, opts.Config.Default.HashPartitionExponent, opts.Config.Default.HashRingResetInterval)
	s.rpc = opts.RPC.WithRouter(s.ring).WithObserver(s.metrics.ObserveRPC)

	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.handleError
	e.Pre(s.observe, s.requestID, s.accessLog, s.recoverPanic, knownMethod, normalizePath, s.authenticate, acceptJSON, negotiate,
		limitQuery, s.bodyLimit, requireJSONBody)
	if err := s.routes(e); err != nil {
		return nil, fmt.Errorf("api service: %w", err)
	}
	s.echo = e
	return s, nil
}

// catalog is what the live conductors offer: the hardware types and
// interface implementations they registered, to fill in and check a node's
// interfaces without loading driver code here.
func (s *Server) catalog(ctx context.Context) (*hwcatalog.Catalog, error) {
	rows, err := s.store.ActiveHardwareInterfaces(ctx, s.cfg.Conductor.HeartbeatTimeout)
	if err != nil {
		return nil, err
	}
	return hwcatalog.New(rows), nil
}

// Handler is the server as an http.Handler (for tests and embedding).
func (s *Server) Handler() http.Handler { return s.echo }

// baseURL is the prefix of every link: the configured public endpoint or
// the request's own scheme and host.
func (s *Server) baseURL(c echo.Context) string {
	if ep := s.cfg.API.PublicEndpoint; ep != "" {
		return strings.TrimRight(ep, "/")
	}
	return c.Scheme() + "://" + c.Request().Host
}
