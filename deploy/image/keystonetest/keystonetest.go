// Package keystonetest is a minimal Keystone Identity API v3 for tests:
// version discovery (GET / and GET /v3) and password authentication scoped
// to a project (POST /v3/auth/tokens), issuing tokens whose catalog lists
// the image endpoints the test gives it. Services in front of which it
// stands (glancetest) ask it whether a token is valid; tests revoke or
// expire tokens to drive a client's re-authentication. Keystone cannot run
// here, so tests of Keystone clients talk to this, through the real client.
package keystonetest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"time"
)

// User is the one account the server knows, with the project its tokens
// are scoped to.
type User struct {
	Name, Domain, Password string
	Project, ProjectDomain string
}

// Endpoint is one catalog endpoint of the image service.
type Endpoint struct {
	// Region names the region ("RegionOne").
	Region string
	// Interface is public, internal or admin.
	Interface string
	URL       string
}

// Server is a Keystone with one user.
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	user     User
	images   []Endpoint
	lifetime time.Duration
	tokens   map[string]time.Time
	issued   int
}

// timeFormat is how Keystone writes expires_at and issued_at.
const timeFormat = "2006-01-02T15:04:05.000000Z"

// NewServer starts a server for user, issuing tokens valid for an hour
// (Keystone's default) and an empty image catalog.
func NewServer(user User) *Server {
	s := &Server{user: user, lifetime: time.Hour, tokens: map[string]time.Time{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.versions)
	mux.HandleFunc("GET /v3", s.version)
	mux.HandleFunc("GET /v3/{$}", s.version)
	mux.HandleFunc("POST /v3/auth/tokens", s.authenticate)
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

// SetPassword changes the user's password, as an operator rotating it.
func (s *Server) SetPassword(password string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.user.Password = password
}

// Valid tells whether token was issued here, is not revoked and has not
// expired: what keystonemiddleware asks Keystone in front of a service.
func (s *Server) Valid(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	expires, ok := s.tokens[token]
	return ok && time.Now().Before(expires)
}

// RevokeAll revokes every token issued so far.
func (s *Server) RevokeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.tokens)
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
		} `json:"scope"`
	} `json:"auth"`
}

// authenticate issues a project-scoped token for the password method:
// user by name in a domain named, project by name in a domain named.
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
	u, p := id.Password.User, req.Auth.Scope.Project
	if p == nil {
		s.writeError(w, http.StatusBadRequest, "Bad Request", "This stand-in issues project-scoped tokens only.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if u.Name != s.user.Name || u.Domain.Name != s.user.Domain || u.Password != s.user.Password {
		s.writeError(w, http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication.")
		return
	}
	if p.Name != s.user.Project || p.Domain.Name != s.user.ProjectDomain {
		s.writeError(w, http.StatusUnauthorized, "Unauthorized", "User "+userID+" has no access to project "+p.Name+".")
		return
	}
	token := randomHex(32)
	issued := time.Now().UTC()
	expires := issued.Add(s.lifetime)
	s.tokens[token] = expires
	s.issued++
	w.Header().Set("X-Subject-Token", token)
	writeJSON(w, http.StatusCreated, map[string]any{"token": s.tokenDoc(issued, expires)})
}

const (
	userID    = "4f2a9c1e8b7d4e6fa1c3b5d7e9f0a2b4"
	projectID = "8c1d3e5f7a9b4c2d8e6f0a1b3c5d7e9f"
)

func (s *Server) tokenDoc(issued, expires time.Time) map[string]any {
	var endpoints []map[string]string
	for i, e := range s.images {
		endpoints = append(endpoints, map[string]string{
			"id": fmt.Sprintf("%032x", i+1), "interface": e.Interface,
			"region": e.Region, "region_id": e.Region, "url": e.URL,
		})
	}
	domain := func(name string) map[string]string { return map[string]string{"id": name, "name": name} }
	return map[string]any{
		"methods":   []string{"password"},
		"audit_ids": []string{randomHex(11)},
		"issued_at": issued.Format(timeFormat), "expires_at": expires.Format(timeFormat),
		"user": map[string]any{"id": userID, "name": s.user.Name, "domain": domain(s.user.Domain),
			"password_expires_at": nil},
		"project":   map[string]any{"id": projectID, "name": s.user.Project, "domain": domain(s.user.ProjectDomain)},
		"is_domain": false,
		"roles":     []map[string]string{{"id": "9fe2ff9ee4384b1894a90878d3e92bab", "name": "member"}},
		"catalog": []map[string]any{
			{"id": "6a1e3c5b7d9f4a2c8e0b1d3f5a7c9e1b", "type": "image", "name": "glance", "endpoints": endpoints},
			{"id": "2b4d6f8a0c1e4a3b5d7f9a1c3e5b7d9f", "type": "identity", "name": "keystone", "endpoints": []map[string]string{
				{"id": "ff", "interface": "public", "region": "RegionOne", "region_id": "RegionOne", "url": s.URL + "/v3/"},
			}},
		},
	}
}

// writeError writes Keystone's error body; a 401 names where to
// authenticate, as Keystone's does.
func (s *Server) writeError(w http.ResponseWriter, code int, title, message string) {
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Keystone uri="`+s.URL+`"`)
	}
	writeJSON(w, code, map[string]any{"error": map[string]any{"code": code, "title": title, "message": message}})
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
