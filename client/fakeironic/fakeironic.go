// Package fakeironic is an HTTP test double of the Bare Metal API for
// unit tests of clients (this module's packages, the CLI): it records
// every request and answers each with the canned response registered for
// its method and path.
package fakeironic

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/noauth"
)

// Request is one recorded request.
type Request struct {
	Method string
	Path   string
	Query  url.Values
	Header http.Header
	Body   string
}

// Response is a canned answer. Body is sent as application/json when set.
type Response struct {
	Status int
	Body   string
	Header map[string]string
}

// Server is a running fake.
type Server struct {
	*httptest.Server

	mu        sync.Mutex
	requests  []Request
	responses map[string][]Response
	last      map[string]Response
}

// New starts a fake; Close it when done.
func New() *Server {
	s := &Server{responses: map[string][]Response{}, last: map[string]Response{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Handle queues a response for method and path (no query). Queued
// responses are served in order; once the queue is empty, the last one
// served repeats.
func (s *Server) Handle(method, path string, r Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := method + " " + path
	s.responses[key] = append(s.responses[key], r)
}

// Requests returns what the fake has received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Endpoint is the bare metal endpoint of the fake, as gophercloud wants it.
func (s *Server) Endpoint() string { return s.URL + "/v1/" }

// Client is a noauth service client on the fake at the given microversion
// ("" sends no version header).
func (s *Server) Client(microversion string) *gophercloud.ServiceClient {
	c, err := noauth.NewBareMetalNoAuth(noauth.EndpointOpts{IronicEndpoint: s.Endpoint()})
	if err != nil {
		panic(err)
	}
	c.Microversion = microversion
	return c
}

// Expand replaces {url} in a canned body with the fake's base URL, as the
// links of a real server would carry it.
func (s *Server) Expand(body string) string { return strings.ReplaceAll(body, "{url}", s.URL) }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), Body: string(body)})
	key := r.Method + " " + r.URL.Path
	resp, found := s.last[key]
	if queue := s.responses[key]; len(queue) > 0 {
		resp, found = queue[0], true
		s.responses[key] = queue[1:]
		s.last[key] = resp
	}
	s.mu.Unlock()
	if !found {
		http.Error(w, `{"error_message": "no fake response for `+key+`"}`, http.StatusNotFound)
		return
	}
	for k, v := range resp.Header {
		w.Header().Set(k, v)
	}
	if resp.Body != "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(resp.Status)
	_, _ = io.WriteString(w, s.Expand(resp.Body))
}
