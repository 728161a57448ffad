// Package httpserver builds the http.Servers Ferric runs (API, boot file
// server, agent) with limits on what one client may hold: without them a
// client trickling its request, or never reading its response, keeps a
// connection and its goroutine for ever.
package httpserver

import (
	"net"
	"net/http"
	"time"
)

// Limits bound one client's use of a server; a zero duration is no limit.
type Limits struct {
	// ReadTimeout bounds reading one request, headers and body.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing the response: the whole of it, or with
	// PerWrite each write of it.
	WriteTimeout time.Duration
	// PerWrite is for servers of large files: a download of many GiB to a
	// slow client may take longer than any fixed bound, so the deadline
	// moves on with every write that goes through, and only a client that
	// stops taking data is cut off.
	PerWrite bool
	// IdleTimeout bounds the wait for the next request on a kept-alive
	// connection; zero falls back to ReadTimeout.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds the request line and headers; beyond it the
	// server answers 431. Zero is net/http's default (1 MiB).
	MaxHeaderBytes int
}

// New returns a server of h with the limits l.
func New(h http.Handler, l Limits) *http.Server {
	srv := &http.Server{
		Handler:        h,
		ReadTimeout:    l.ReadTimeout,
		IdleTimeout:    l.IdleTimeout,
		MaxHeaderBytes: l.MaxHeaderBytes,
	}
	if l.PerWrite && l.WriteTimeout > 0 {
		srv.Handler = perWrite(h, l.WriteTimeout)
	} else {
		srv.WriteTimeout = l.WriteTimeout
	}
	return srv
}

// Serve serves srv on l, over TLS when srv.TLSConfig is set (its
// certificate comes from the configuration, as tlsfiles.ServerCert gives
// it, so no files are named here).
func Serve(srv *http.Server, l net.Listener) error {
	if srv.TLSConfig != nil {
		return srv.ServeTLS(l, "", "")
	}
	return srv.Serve(l)
}

// perWrite moves the connection's write deadline d ahead before every
// write of the response.
func perWrite(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dw := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), d: d}
		// The headers alone go out with the first write or at the end;
		// a deadline set now covers a handler that writes nothing.
		_ = dw.rc.SetWriteDeadline(time.Now().Add(d))
		h.ServeHTTP(dw, r)
	})
}

type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	if err := w.rc.SetWriteDeadline(time.Now().Add(w.d)); err != nil {
		return 0, err
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
