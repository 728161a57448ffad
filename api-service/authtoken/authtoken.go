// Package authtoken validates Keystone tokens for the API, as
// keystonemiddleware's auth_token does in front of Ironic: the API
// authenticates to Keystone v3 with its own credentials and asks it about
// each client's X-Auth-Token (GET /v3/auth/tokens with X-Subject-Token),
// remembering valid tokens for a while so that most requests cost no
// round trip. A valid service token (X-Service-Token, from another
// OpenStack service acting for a user) lets the user's token be past its
// expiry, never revoked.
package authtoken

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
)

var (
	// ErrUnauthorized: the token is missing, unknown, revoked or expired
	// (the client should get a new one).
	ErrUnauthorized = errors.New("the request you have made requires authentication")
	// ErrUnavailable: Keystone could not be asked (unreachable, or it
	// refused the API's own credentials).
	ErrUnavailable = errors.New("the Keystone service is temporarily unavailable")
)

// Options configure a Validator ([keystone_authtoken]).
type Options struct {
	// AuthURL is Keystone's URL, versioned (…/v3) or not.
	AuthURL                            string
	Username, Password, UserDomainName string
	ProjectName, ProjectDomainName     string
	// CacheTime is how long a validated token is remembered (never past
	// its expiry); 0 asks Keystone every time.
	CacheTime time.Duration
	// CacheSize bounds the tokens remembered.
	CacheSize int
	// Timeout bounds each request to Keystone.
	Timeout time.Duration
	// ServiceTokenRoles: a service token must hold one of them.
	ServiceTokenRoles []string
}

// Identity is what a valid token says about its holder.
type Identity struct {
	UserID, UserName, UserDomainID string
	// ProjectID and ProjectName are set for a project-scoped token.
	ProjectID, ProjectName string
	// SystemScope is "all" for a system-scoped token.
	SystemScope string
	// Roles are lower-cased, implied roles included (Keystone lists them).
	Roles     []string
	ExpiresAt time.Time
}

// Validator checks tokens; it is safe for concurrent use.
type Validator struct {
	opts  Options
	cache *cache
	// refused remembers tokens Keystone refused, apart from cache so that
	// a stream of made-up tokens cannot push valid ones out: each would
	// otherwise cost a round trip to Keystone.
	refused *cache

	mu     sync.Mutex
	client *gophercloud.ServiceClient
}

// New prepares a Validator; it reaches Keystone only when a token is
// first checked.
func New(opts Options) *Validator {
	size := max(opts.CacheSize, 1)
	return &Validator{opts: opts, cache: newCache(size), refused: newCache(size)}
}

// Authenticate checks a request's user token and, when one came, its
// service token. Errors wrap ErrUnauthorized or ErrUnavailable.
func (v *Validator) Authenticate(ctx context.Context, userToken, serviceToken string) (Identity, error) {
	if userToken == "" {
		return Identity{}, fmt.Errorf("%w: no X-Auth-Token", ErrUnauthorized)
	}
	allowExpired := false
	if serviceToken != "" {
		svc, err := v.validate(ctx, serviceToken, false)
		if err != nil {
			return Identity{}, fmt.Errorf("service token: %w", err)
		}
		if !slices.ContainsFunc(svc.Roles, func(r string) bool {
			return slices.ContainsFunc(v.opts.ServiceTokenRoles, func(want string) bool { return strings.EqualFold(r, want) })
		}) {
			return Identity{}, fmt.Errorf("%w: the service token holds none of the service token roles", ErrUnauthorized)
		}
		allowExpired = true
	}
	return v.validate(ctx, userToken, allowExpired)
}

func (v *Validator) validate(ctx context.Context, token string, allowExpired bool) (Identity, error) {
	key := sha256.Sum256([]byte(token))
	now := time.Now()
	if id, ok := v.cache.get(key, now); ok {
		return id, nil
	}
	// A token refused alone may still pass with a service token (an
	// expired one), so only lone checks use and fill the refusals.
	if _, ok := v.refused.get(key, now); ok && !allowExpired {
		return Identity{}, fmt.Errorf("%w: Keystone refused the token", ErrUnauthorized)
	}
	id, err := v.fetch(ctx, token, allowExpired)
	if errors.Is(err, ErrUnauthorized) && !allowExpired && v.opts.CacheTime > 0 {
		v.refused.put(key, Identity{}, now.Add(min(v.opts.CacheTime, refusalTime)))
	}
	if err != nil {
		return Identity{}, err
	}
	// An expired token that a service token vouched for is not
	// remembered: alone it must be refused.
	until := now.Add(v.opts.CacheTime)
	if id.ExpiresAt.Before(until) {
		until = id.ExpiresAt
	}
	if until.After(now) {
		v.cache.put(key, id, until)
	}
	return id, nil
}

// refusalTime bounds how long a refused token is refused without asking
// Keystone again: no token Keystone refused becomes valid later, but a
// clock skewed between Keystone's nodes could refuse a fresh one briefly.
const refusalTime = 10 * time.Second

// fetch asks Keystone about token. Keystone's answers are never quoted in
// errors: a 404 names the token it could not find.
func (v *Validator) fetch(ctx context.Context, token string, allowExpired bool) (Identity, error) {
	sc, err := v.serviceClient(ctx)
	if err != nil {
		return Identity{}, err
	}
	url := sc.ServiceURL("auth", "tokens")
	if allowExpired {
		url += "?allow_expired=1"
	}
	var r tokens.GetResult
	//nolint:bodyclose // gophercloud reads and closes the body (no KeepResponseBody)
	resp, err := sc.Get(ctx, url, &r.Body, &gophercloud.RequestOpts{
		MoreHeaders: map[string]string{"X-Subject-Token": token},
		OkCodes:     []int{http.StatusOK, 203},
	})
	_, r.Header, r.Err = gophercloud.ParseResponse(resp, err)
	switch {
	case gophercloud.ResponseCodeIs(r.Err, http.StatusNotFound):
		return Identity{}, fmt.Errorf("%w: Keystone does not know the token, or it expired or was revoked", ErrUnauthorized)
	case r.Err != nil:
		return Identity{}, fmt.Errorf("%w: validate a token: %s", ErrUnavailable, describe(r.Err))
	}
	return identity(r)
}

func identity(r tokens.GetResult) (Identity, error) {
	var doc struct {
		ExpiresAt time.Time `json:"expires_at"`
		User      struct {
			ID, Name string
			Domain   struct{ ID string } `json:"domain"`
		} `json:"user"`
		Project *struct{ ID, Name string } `json:"project"`
		System  map[string]bool            `json:"system"`
		Roles   []tokens.Role              `json:"roles"`
	}
	if err := r.ExtractInto(&doc); err != nil {
		return Identity{}, fmt.Errorf("%w: Keystone's token document: %w", ErrUnavailable, err)
	}
	id := Identity{UserID: doc.User.ID, UserName: doc.User.Name, UserDomainID: doc.User.Domain.ID, ExpiresAt: doc.ExpiresAt}
	if doc.Project != nil {
		id.ProjectID, id.ProjectName = doc.Project.ID, doc.Project.Name
	}
	if doc.System["all"] {
		id.SystemScope = "all"
	}
	for _, role := range doc.Roles {
		id.Roles = append(id.Roles, strings.ToLower(role.Name))
	}
	return id, nil
}

// serviceClient authenticates the API to Keystone once; gophercloud gets
// a new token when Keystone stops accepting it.
func (v *Validator) serviceClient(ctx context.Context) (*gophercloud.ServiceClient, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.client != nil {
		return v.client, nil
	}
	pc, err := openstack.NewClient(v.opts.AuthURL)
	if err != nil {
		return nil, fmt.Errorf("keystone auth_url %s: %w", v.opts.AuthURL, err)
	}
	pc.HTTPClient = http.Client{Timeout: v.opts.Timeout}
	err = openstack.Authenticate(ctx, pc, gophercloud.AuthOptions{
		IdentityEndpoint: v.opts.AuthURL, Username: v.opts.Username, Password: v.opts.Password,
		DomainName: v.opts.UserDomainName, AllowReauth: true,
		Scope: &gophercloud.AuthScope{ProjectName: v.opts.ProjectName, DomainName: v.opts.ProjectDomainName},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: authenticate to %s as %s: %s", ErrUnavailable, v.opts.AuthURL, v.opts.Username, describe(err))
	}
	sc, err := openstack.NewIdentityV3(pc, gophercloud.EndpointOpts{})
	if err != nil {
		return nil, fmt.Errorf("%w: identity v3 endpoint: %w", ErrUnavailable, err)
	}
	v.client = sc
	return sc, nil
}

// describe words a gophercloud error without the response body.
func describe(err error) string {
	var code gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &code) {
		return fmt.Sprintf("Keystone answered %d to %s %s", code.Actual, code.Method, code.URL)
	}
	return err.Error()
}
