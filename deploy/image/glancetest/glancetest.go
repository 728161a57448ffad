// Package glancetest is a minimal Glance Image API v2 for tests: version
// discovery, image records (GET /v2/images/{id}) and their data
// (GET /v2/images/{id}/file), nothing else; with RequireTokens, only for a valid Keystone token. Glance is a service, not hardware, so tests that cannot
// run one talk to this instead, through the real client.
package glancetest

import (
	"crypto/md5"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Image is one image record; Data is its content.
type Image struct {
	ID         string
	DiskFormat string
	Status     string
	// HashValue is served as os_hash_value (sha512); empty means the
	// digest of Data. Checksum likewise for the md5 checksum.
	HashValue, Checksum string
	// NoMultihash leaves os_hash_algo and os_hash_value out of the
	// record, as Glance did before Rocky: clients check the md5 checksum.
	NoMultihash bool
	// Properties are extra image properties (kernel_id, ramdisk_id, ...).
	Properties map[string]string
	Data       []byte
}

// Server serves images.
type Server struct {
	*httptest.Server

	mu        sync.Mutex
	images    map[string]Image
	downloads map[string]*atomic.Int64
	tokens    Tokens
	refused   int
}

// Tokens tells valid Keystone tokens (keystonetest.Server does).
type Tokens interface {
	Valid(token string) bool
}

// NewServer starts a server with no images.
func NewServer() *Server {
	s := &Server{images: map[string]Image{}, downloads: map[string]*atomic.Int64{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", versions(http.StatusMultipleChoices))
	mux.HandleFunc("GET /versions", versions(http.StatusOK))
	mux.HandleFunc("GET /v2/images/{id}", s.record)
	mux.HandleFunc("GET /v2/images/{id}/file", s.file)
	s.Server = httptest.NewServer(s.authenticated(mux))
	return s
}

// RequireTokens makes the image API answer 401, as keystonemiddleware
// in front of Glance does, to a request whose X-Auth-Token is not valid
// by tokens; version discovery stays open, as in Glance.
func (s *Server) RequireTokens(tokens Tokens) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = tokens
}

// Refused counts the requests refused for their token.
func (s *Server) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

func (s *Server) authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		refuse := s.tokens != nil && strings.HasPrefix(r.URL.Path, "/v2/") && !s.tokens.Valid(r.Header.Get("X-Auth-Token"))
		if refuse {
			s.refused++
		}
		s.mu.Unlock()
		if refuse {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error": {"code": 401, "title": "Unauthorized", "message": "The request you have made requires authentication."}}` + "\n"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Add stores img, filling Status (active), Checksum and HashValue from
// Data when empty.
func (s *Server) Add(img Image) {
	if img.Status == "" {
		img.Status = "active"
	}
	if img.Checksum == "" {
		sum := md5.Sum(img.Data)
		img.Checksum = hex.EncodeToString(sum[:])
	}
	if img.HashValue == "" {
		sum := sha512.Sum512(img.Data)
		img.HashValue = hex.EncodeToString(sum[:])
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.images[img.ID] = img
	if s.downloads[img.ID] == nil {
		s.downloads[img.ID] = &atomic.Int64{}
	}
}

// Downloads counts the data requests for an image.
func (s *Server) Downloads(id string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.downloads[id]; n != nil {
		return n.Load()
	}
	return 0
}

// versions answers Glance's version discovery, which needs no token:
// clients given an unversioned endpoint ask it whether v2 is there.
func versions(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		self := []map[string]string{{"rel": "self", "href": "http://" + r.Host + "/v2/"}}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]any{"versions": []map[string]any{
			{"id": "v2.16", "status": "CURRENT", "links": self},
			{"id": "v2.15", "status": "SUPPORTED", "links": self},
		}})
	}
}

func (s *Server) lookup(w http.ResponseWriter, r *http.Request) (Image, bool) {
	s.mu.Lock()
	img, ok := s.images[r.PathValue("id")]
	s.mu.Unlock()
	if !ok {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("404 Not Found\n\nNo image found with ID " + r.PathValue("id") + "\n"))
	}
	return img, ok
}

func (s *Server) record(w http.ResponseWriter, r *http.Request) {
	img, ok := s.lookup(w, r)
	if !ok {
		return
	}
	doc := map[string]any{
		"id": img.ID, "name": "image-" + img.ID, "status": img.Status, "visibility": "public",
		"disk_format": img.DiskFormat, "container_format": "bare", "size": len(img.Data),
		"checksum":   img.Checksum,
		"created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
		"self": "/v2/images/" + img.ID, "file": "/v2/images/" + img.ID + "/file", "schema": "/v2/schemas/image",
	}
	if !img.NoMultihash {
		doc["os_hash_algo"], doc["os_hash_value"] = "sha512", img.HashValue
	}
	for k, v := range img.Properties {
		doc[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(doc)
}

func (s *Server) file(w http.ResponseWriter, r *http.Request) {
	img, ok := s.lookup(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	s.downloads[img.ID].Add(1)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(img.Data)))
	w.Header().Set("Content-MD5", img.Checksum)
	_, _ = w.Write(img.Data)
}
