// Package keystonetest is a minimal Keystone Identity API v3 for tests:
// version discovery (GET / and GET /v3), password authentication scoped
// to a project or to the system (POST /v3/auth/tokens), token validation
// (GET /v3/auth/tokens with X-Subject-Token, allow_expired included) and
// revocation (DELETE), issuing tokens whose catalog lists the image
// endpoints the test gives it. Services in front of which it stands
// (glancetest, Ferric's API) validate tokens through it; tests revoke or
// expire tokens to drive a client's re-authentication or a service's
// refusal. Keystone cannot run here, so tests of Keystone clients talk to
// this, through the real client.
package keystonetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"time"
)

// User is an account, with the project its project-scoped tokens are
// scoped to.
type User struct {
	Name, Domain, Password string
	Project, ProjectDomain string
	// Roles are the user's roles on its project and, when System is set,
	// on the system; empty means member. As Keystone's default role
	// implications do, admin implies member and member implies reader:
	// a token lists the implied roles too.
	Roles []string
	// System lets the user ask for system-scoped tokens.
	System bool
}

// Endpoint is one catalog endpoint of the image service.
type Endpoint struct {
	// Region names the region ("RegionOne").
	Region string
	// Interface is public, internal or admin.
	Interface string
	URL       string
}

// Server is a Keystone with the users it was given.
type Server struct {
	*httptest.Server

	mu          sync.Mutex
	users       []User
	images      []Endpoint
	lifetime    time.Duration
	tokens      map[string]*token
	issued      int
	validations int
}

// token is an issued token: whose, its scope, its life.
type token struct {
	user            User
	system          bool
	issued, expires time.Time
	revoked         bool
}

// expiredWindow is how long after its expiry Keystone still validates a
// token for a service asking with allow_expired ([token]
// allow_expired_window, two days).
const expiredWindow = 48 * time.Hour

// timeFormat is how Keystone writes expires_at and issued_at.
const timeFormat = "2006-01-02T15:04:05.000000Z"

// NewServer starts a server for user (more with AddUser), issuing tokens
// valid for an hour (Keystone's default) and an empty image catalog.
func NewServer(user User) *Server {
	s := &Server{users: []User{user}, lifetime: time.Hour, tokens: map[string]*token{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.versions)
	mux.HandleFunc("GET /v3", s.version)
	mux.HandleFunc("GET /v3/{$}", s.version)
	mux.HandleFunc("POST /v3/auth/tokens", s.authenticate)
	mux.HandleFunc("GET /v3/auth/tokens", s.validate)
	mux.HandleFunc("HEAD /v3/auth/tokens", s.validate)
	mux.HandleFunc("DELETE /v3/auth/tokens", s.revoke)
	// Handlers read s.URL: start serving only once it is set.
	s.Server = httptest.NewUnstartedServer(mux)
	s.Start()
	return s
}

// AddImageEndpoint adds an endpoint to the image service of the catalogs
// of tokens issued from now on.
func (s *Server) AddImageEndpoint(e Endpoint) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.images = append(s.images, e)
}

// SetTokenLifetime sets how long tokens issued from now on are valid.
func (s *Server) SetTokenLifetime(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lifetime = d
}

// AddUser adds an account.
func (s *Server) AddUser(u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users = append(s.users, u)
}

// SetPassword changes the first user's password, as an operator rotating
// it.
func (s *Server) SetPassword(password string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[0].Password = password
}

// Valid tells whether token was issued here, is not revoked and has not
// expired: what keystonemiddleware asks Keystone in front of a service.
func (s *Server) Valid(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[token]
	return ok && !t.revoked && time.Now().Before(t.expires)
}

// RevokeAll revokes every token issued so far.
func (s *Server) RevokeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tokens {
		t.revoked = true
	}
}

// Expire makes a token issued here expire now, as if its lifetime had
// passed.
func (s *Server) Expire(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tokens[id]; ok {
		t.expires = time.Now().Add(-time.Second)
	}
}

// Validations counts the token validations asked (GET and HEAD
// /v3/auth/tokens).
func (s *Server) Validations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.validations
}

// Issued counts the tokens issued.
func (s *Server) Issued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issued
}

func (s *Server) versionDoc() map[string]any {
	return map[string]any{
		"id": "v3.14", "status": "stable", "updated": "2020-04-07T00:00:00Z",
		"links":       []map[string]string{{"rel": "self", "href": s.URL + "/v3/"}},
		"media-types": []map[string]string{{"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}},
	}
}

// versions answers as Keystone does on its root: 300 Multiple Choices
// listing the API versions.
func (s *Server) versions(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusMultipleChoices, map[string]any{"versions": map[string]any{"values": []any{s.versionDoc()}}})
}

func (s *Server) version(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"version": s.versionDoc()})
}

type nameInDomain struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Domain struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"domain"`
}

type authRequest struct {
	Auth struct {
		Identity struct {
			Methods  []string `json:"methods"`
			Password struct {
				User struct {
					nameInDomain
					Password string `json:"password"`
				} `json:"user"`
			} `json:"password"`
		} `json:"identity"`
		Scope struct {
			Project *nameInDomain `json:"project"`
			System  *struct {
				All bool `json:"all"`
			} `json:"system"`
		} `json:"scope"`
	} `json:"auth"`
}

// authenticate issues a token for the password method: user by name in
// a domain named, scoped to a project by name in a domain named or to the
// system.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) {
	var req authRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		s.writeError(w, http.StatusBadRequest, "Bad Request", "Expecting to find auth in request body.")
		return
	}
	id := req.Auth.Identity
	if !slices.Contains(id.Methods, "password") {
		s.writeError(w, http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication.")
		return
	}
	u, p, sys := id.Password.User, req.Auth.Scope.Project, req.Auth.Scope.System
	if p == nil && (sys == nil || !sys.All) {
		s.writeError(w, http.StatusBadRequest, "Bad Request", "This stand-in issues project-scoped and system-scoped tokens only.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.users, func(k User) bool {
		return k.Name == u.Name && k.Domain == u.Domain.Name && k.Password == u.Password
	})
	if i < 0 {
		s.writeError(w, http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication.")
		return
	}
	user := s.users[i]
	switch {
	case p == nil && !user.System:
		s.writeError(w, http.StatusUnauthorized, "Unauthorized", "User "+userID+" has no access to the system.")
		return
	case p != nil && (p.Name != user.Project || p.Domain.Name != user.ProjectDomain):
		s.writeError(w, http.StatusUnauthorized, "Unauthorized", "User "+userID+" has no access to project "+p.Name+".")
		return
	}
	id2 := randomHex(32)
	issued := time.Now().UTC()
	t := &token{user: user, system: p == nil, issued: issued, expires: issued.Add(s.lifetime)}
	s.tokens[id2] = t
	s.issued++
	w.Header().Set("X-Subject-Token", id2)
	writeJSON(w, http.StatusCreated, map[string]any{"token": s.tokenDoc(t)})
}

// validate answers GET (and HEAD) /v3/auth/tokens: the caller's own token
// must be valid (else 401), the subject token valid too (else 404), or
// within the expired window with ?allow_expired=1, never when revoked.
func (s *Server) validate(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.validations++
	if caller, ok := s.tokens[r.Header.Get("X-Auth-Token")]; !ok || caller.revoked || !time.Now().Before(caller.expires) {
		s.writeError(w, http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication.")
		return
	}
	subject := r.Header.Get("X-Subject-Token")
	t, ok := s.tokens[subject]
	window := time.Duration(0)
	if r.URL.Query().Get("allow_expired") == "1" || r.URL.Query().Get("allow_expired") == "true" {
		window = expiredWindow
	}
	if !ok || t.revoked || !time.Now().Before(t.expires.Add(window)) {
		s.writeError(w, http.StatusNotFound, "Not Found", "Could not find token: "+subject+".")
		return
	}
	w.Header().Set("X-Subject-Token", subject)
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"token": s.tokenDoc(t)})
}

// revoke answers DELETE /v3/auth/tokens: 204, or 404 for a token that is
// not valid.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if caller, ok := s.tokens[r.Header.Get("X-Auth-Token")]; !ok || caller.revoked || !time.Now().Before(caller.expires) {
		s.writeError(w, http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication.")
		return
	}
	subject := r.Header.Get("X-Subject-Token")
	t, ok := s.tokens[subject]
	if !ok || t.revoked || !time.Now().Before(t.expires) {
		s.writeError(w, http.StatusNotFound, "Not Found", "Could not find token: "+subject+".")
		return
	}
	t.revoked = true
	w.WriteHeader(http.StatusNoContent)
}

// impliedRoles are Keystone's default role implications.
var impliedRoles = map[string][]string{"admin": {"member", "reader"}, "member": {"reader"}}

// roles lists a user's roles with the ones they imply, as tokens do.
func roles(u User) []map[string]string {
	names := u.Roles
	if len(names) == 0 {
		names = []string{"member"}
	}
	var out []map[string]string
	seen := map[string]bool{}
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			out = append(out, map[string]string{"id": fmt.Sprintf("%032x", len(seen)), "name": n})
		}
	}
	for _, n := range names {
		add(n)
		for _, implied := range impliedRoles[n] {
			add(implied)
		}
	}
	return out
}

const userID = "4f2a9c1e8b7d4e6fa1c3b5d7e9f0a2b4"

// ProjectID is the id of the project called name in the tokens the
// stand-in issues: what a node's owner or lessee holds for that project.
func ProjectID(name string) string { return idOf("project/" + name) }

func (s *Server) tokenDoc(t *token) map[string]any {
	var endpoints []map[string]string
	for i, e := range s.images {
		endpoints = append(endpoints, map[string]string{
			"id": fmt.Sprintf("%032x", i+1), "interface": e.Interface,
			"region": e.Region, "region_id": e.Region, "url": e.URL,
		})
	}
	domain := func(name string) map[string]string { return map[string]string{"id": name, "name": name} }
	doc := map[string]any{
		"methods":   []string{"password"},
		"audit_ids": []string{randomHex(11)},
		"issued_at": t.issued.Format(timeFormat), "expires_at": t.expires.Format(timeFormat),
		"user": map[string]any{"id": idOf(t.user.Name), "name": t.user.Name, "domain": domain(t.user.Domain),
			"password_expires_at": nil},
		"roles": roles(t.user),
		"catalog": []map[string]any{
			{"id": "6a1e3c5b7d9f4a2c8e0b1d3f5a7c9e1b", "type": "image", "name": "glance", "endpoints": endpoints},
			{"id": "2b4d6f8a0c1e4a3b5d7f9a1c3e5b7d9f", "type": "identity", "name": "keystone", "endpoints": []map[string]string{
				{"id": "ff", "interface": "public", "region": "RegionOne", "region_id": "RegionOne", "url": s.URL + "/v3/"},
			}},
		},
	}
	if t.system {
		doc["system"] = map[string]bool{"all": true}
	} else {
		doc["project"] = map[string]any{"id": ProjectID(t.user.Project), "name": t.user.Project, "domain": domain(t.user.ProjectDomain)}
		doc["is_domain"] = false
	}
	return doc
}

// writeError writes Keystone's error body; a 401 names where to
// authenticate, as Keystone's does.
func (s *Server) writeError(w http.ResponseWriter, code int, title, message string) {
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Keystone uri="`+s.URL+`"`)
	}
	writeJSON(w, code, map[string]any{"error": map[string]any{"code": code, "title": title, "message": message}})
}

// idOf makes a Keystone-like id (32 hex digits) from a name.
func idOf(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:16])
}

// Issue gets a token the way a client does, POST /v3/auth/tokens with the
// password method, for user (by name and domain, with its password)
// scoped to the system or to its project.
func (s *Server) Issue(ctx context.Context, u User, system bool) (string, error) {
	scope := map[string]any{"project": map[string]any{"name": u.Project, "domain": map[string]string{"name": u.ProjectDomain}}}
	if system {
		scope = map[string]any{"system": map[string]bool{"all": true}}
	}
	body, err := json.Marshal(map[string]any{"auth": map[string]any{
		"identity": map[string]any{"methods": []string{"password"}, "password": map[string]any{"user": map[string]any{
			"name": u.Name, "domain": map[string]string{"name": u.Domain}, "password": u.Password}}},
		"scope": scope,
	}})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v3/auth/tokens", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.Client().Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		msg, _ := io.ReadAll(resp.Body)
		return "", fmt.Errorf("issue a token for %s: %d %s", u.Name, resp.StatusCode, msg)
	}
	return resp.Header.Get("X-Subject-Token"), nil
}

func writeJSON(w http.ResponseWriter, code int, doc any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(doc)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
