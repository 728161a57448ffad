package publish

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Prefix is the path under which the boot file server must hand requests
// to WebServer.Wrap; the files live in a folder of that name under the HTTP
// root.
const Prefix = "/vmedia/"

// secretFile holds the signing secret in the media folder; names starting
// with '.' are refused, so it can never be published or served.
const secretFile = ".url-secret"

// never is the modification time of a file published without a lifetime:
// a file is live while its modification time is in the future.
var never = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)

// WebServer publishes files into a folder served by the conductor's boot
// file server, behind URLs signed with HMAC-SHA256 of a secret that stays
// in that folder (0600 under 0700), so the URLs survive a conductor restart.
type WebServer struct {
	dir     string
	baseURL string
	secret  []byte
	now     func() time.Time
}

// NewWebServer uses dir (created 0700 when missing) and makes URLs under
// baseURL, the boot file server's [deploy] http_url.
func NewWebServer(dir, baseURL string) (*WebServer, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("publish: [deploy] http_url %q is not an http(s) URL", baseURL)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("publish: media folder: %w", err)
	}
	// MkdirAll leaves an existing folder's mode alone.
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("publish: media folder: %w", err)
	}
	secret, err := loadSecret(filepath.Join(dir, secretFile))
	if err != nil {
		return nil, err
	}
	return &WebServer{dir: dir, baseURL: strings.TrimRight(baseURL, "/"), secret: secret, now: time.Now}, nil
}

func loadSecret(path string) ([]byte, error) {
	s, err := os.ReadFile(path)
	if err == nil && len(s) >= 32 {
		return s, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("publish: read the URL secret: %w", err)
	}
	s = make([]byte, 32)
	if _, err := rand.Read(s); err != nil {
		return nil, fmt.Errorf("publish: make the URL secret: %w", err)
	}
	if err := writeAtomic(filepath.Dir(path), filepath.Base(path), strings.NewReader(string(s)), time.Now()); err != nil {
		return nil, fmt.Errorf("publish: store the URL secret: %w", err)
	}
	return s, nil
}

// Publish writes the file under a temporary name and renames it, so a BMC
// never reads half a medium; its modification time is its expiry.
func (w *WebServer) Publish(_ context.Context, name string, r io.Reader, lifetime time.Duration) error {
	if err := checkName(name); err != nil {
		return err
	}
	expiry := never
	if lifetime > 0 {
		expiry = w.now().Add(lifetime)
	}
	if err := writeAtomic(w.dir, name, r, expiry); err != nil {
		return fmt.Errorf("publish: %s: %w", name, err)
	}
	return nil
}

func writeAtomic(dir, name string, r io.Reader, mtime time.Time) error {
	// CreateTemp makes the file 0600.
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chtimes(tmp, mtime, mtime); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}

// URL is baseURL/vmedia/<name>?expires=<unix>&sig=<hex>.
func (w *WebServer) URL(_ context.Context, name string, ttl time.Duration) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	if err := checkTTL(ttl); err != nil {
		return "", err
	}
	expires := w.now().Add(ttl).Unix()
	return fmt.Sprintf("%s%s%s?expires=%d&sig=%s", w.baseURL, Prefix, name, expires, w.sign(name, expires)), nil
}

// sign covers the name and the expiry but not the method, so one URL
// answers both GET and HEAD.
func (w *WebServer) sign(name string, expires int64) string {
	m := hmac.New(sha256.New, w.secret)
	fmt.Fprintf(m, "%d\n%s%s", expires, Prefix, name)
	return hex.EncodeToString(m.Sum(nil))
}

// Delete removes the file; one already gone is fine.
func (w *WebServer) Delete(_ context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(w.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("publish: delete %s: %w", name, err)
	}
	return nil
}

// Reap removes the files whose lifetime has passed (and temporary files
// left by a crash) and returns how many it removed.
func (w *WebServer) Reap() (int, error) {
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return 0, fmt.Errorf("publish: reap: %w", err)
	}
	now := w.now()
	removed := 0
	var errs []error
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || e.Name() == secretFile {
			continue
		}
		stale := strings.HasPrefix(e.Name(), ".tmp-") && info.ModTime().Before(now.Add(-time.Hour))
		if !stale && (strings.HasPrefix(e.Name(), ".") || info.ModTime().After(now)) {
			continue
		}
		if err := os.Remove(filepath.Join(w.dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("publish: reap: %w", err)
	}
	return removed, nil
}

// RunReaper calls Reap every interval until ctx ends, passing failures to
// report.
func (w *WebServer) RunReaper(ctx context.Context, interval time.Duration, report func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := w.Reap(); err != nil {
				report(err)
			}
		}
	}
}

// Wrap serves Prefix itself and passes every other path to next (the boot
// file server's file handler), which must never see the media folder. It
// expects paths as next does, after any prefix of http_url is stripped.
func (w *WebServer) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		// Cleaned as the file server cleans it: "//vmedia/x" or
		// "/a/../vmedia/x" must not reach the folder through next.
		p := path.Clean("/" + r.URL.Path)
		name, ok := strings.CutPrefix(p, Prefix)
		if !ok && p+"/" != Prefix {
			next.ServeHTTP(rw, r)
			return
		}
		w.serve(rw, r, name)
	})
}

func (w *WebServer) serve(rw http.ResponseWriter, r *http.Request, name string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		rw.Header().Set("Allow", "GET, HEAD")
		http.Error(rw, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if checkName(name) != nil {
		http.NotFound(rw, r)
		return
	}
	q := r.URL.Query()
	expires, err := strconv.ParseInt(q.Get("expires"), 10, 64)
	if err != nil || w.now().Unix() >= expires ||
		!hmac.Equal([]byte(q.Get("sig")), []byte(w.sign(name, expires))) {
		http.Error(rw, "forbidden", http.StatusForbidden)
		return
	}
	f, err := os.Open(filepath.Join(w.dir, name))
	if err != nil {
		http.NotFound(rw, r)
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() || !info.ModTime().After(w.now()) {
		http.NotFound(rw, r)
		return
	}
	rw.Header().Set("Content-Type", "application/octet-stream")
	rw.Header().Set("Cache-Control", "no-store")
	// No modification time: it is the expiry, not a Last-Modified.
	http.ServeContent(rw, r, name, time.Time{}, f)
}
