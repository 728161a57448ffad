package image

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// ErrChecksumMismatch is returned when downloaded content does not match the
// checksum the caller gave.
var ErrChecksumMismatch = errors.New("image checksum mismatch")

// ErrNotFound is returned when the source does not exist (HTTP 404, missing
// file).
var ErrNotFound = errors.New("image not found")

// Source names an image and how to check it. Checksum is instance_info's
// image_checksum: a bare hex digest (md5, sha256 or sha512, told apart by
// length) or "algo:hex". HashAlgo/HashValue are image_os_hash_algo and
// image_os_hash_value and take precedence.
type Source struct {
	URL       string
	Checksum  string
	HashAlgo  string
	HashValue string
	// Open, when set, fetches the content instead of URL, which then only
	// names the image (a Glance image is glance://<id>, downloaded through
	// the Image API with the service's credentials).
	Open func(ctx context.Context) (io.ReadCloser, error)
	// MaxSize is the largest content accepted, in bytes; 0 is no limit.
	MaxSize int64
}

// expected returns the hash algorithm and lower-case digest the content
// must match; algo is "" when the caller gave no checksum.
func (s Source) expected() (algo, digest string, err error) {
	switch {
	case s.HashAlgo != "" || s.HashValue != "":
		algo, digest = strings.ToLower(s.HashAlgo), strings.ToLower(s.HashValue)
	case s.Checksum != "":
		digest = strings.ToLower(s.Checksum)
		if a, d, ok := strings.Cut(digest, ":"); ok {
			algo, digest = a, d
		} else {
			algo = map[int]string{32: "md5", 64: "sha256", 128: "sha512"}[len(digest)]
		}
	default:
		return "", "", nil
	}
	want := map[string]int{"md5": 32, "sha256": 64, "sha512": 128}[algo]
	if want == 0 {
		return "", "", fmt.Errorf("unsupported image hash algorithm %q (md5, sha256 or sha512)", algo)
	}
	if _, err := hex.DecodeString(digest); err != nil || len(digest) != want {
		return "", "", fmt.Errorf("image %s checksum %q is not a %d-digit hex digest", algo, digest, want)
	}
	return algo, digest, nil
}

func newHash(algo string) hash.Hash {
	switch algo {
	case "md5":
		return md5.New()
	case "sha512":
		return sha512.New()
	}
	return sha256.New()
}

// Verifier passes a reader through, hashing what is read, and at its end
// returns ErrChecksumMismatch instead of io.EOF when the content does not
// match the source's checksum: a consumer that stops on the error (an
// upload) never completes with bad data. Err tells afterwards, whatever
// the consumer made of the error.
type Verifier struct {
	r                  io.Reader
	h                  hash.Hash
	algo, digest, name string
	err                error
}

// NewVerifier checks r against src's checksum; a src without one passes r
// unchecked.
func NewVerifier(src Source, r io.Reader) (*Verifier, error) {
	algo, digest, err := src.expected()
	if err != nil {
		return nil, err
	}
	v := &Verifier{r: r, algo: algo, digest: digest, name: redact(src.URL)}
	if algo != "" {
		v.h = newHash(algo)
	}
	return v, nil
}

func (v *Verifier) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	if v.h == nil {
		return n, err
	}
	v.h.Write(p[:n])
	if err == io.EOF {
		if got := hex.EncodeToString(v.h.Sum(nil)); got != v.digest {
			v.err = fmt.Errorf("%w: %s of %s is %s, expected %s", ErrChecksumMismatch, v.algo, v.name, got, v.digest)
			return n, v.err
		}
	}
	return n, err
}

// Err is the mismatch found at the end of the content, or nil.
func (v *Verifier) Err() error { return v.err }

// CacheOptions configures a Cache.
type CacheOptions struct {
	// Dir holds the cache; created if missing.
	Dir string
	// MaxBytes bounds the total size of entries no node references; 0 means
	// no bound. Referenced entries are never deleted, so the cache may
	// exceed the bound while deploys hold it.
	MaxBytes int64
	// Client downloads http(s) sources; nil means Destinations' client.
	Client *http.Client
	// Destinations are the addresses the default client downloads from.
	Destinations Destinations
	// StallTimeout aborts a download that receives nothing for this long
	// (default 2 minutes).
	StallTimeout time.Duration
	// AllowedPaths are the directories file:// sources may read from
	// (CheckLocalPath); none: no file:// source is read.
	AllowedPaths []string
}

// Entry is a cached image. Path stays valid while the node that acquired it
// holds its reference.
type Entry struct {
	Path   string
	SHA256 string
	Size   int64
}

type entry struct {
	Entry
	refs     map[string]struct{}
	lastUsed time.Time
}

type flight struct {
	done    chan struct{}
	sha     string
	err     error
	waiters int
	cancel  context.CancelFunc
	// max is the size limit the download runs with.
	max int64
}

// Cache is a content-addressed, size-bounded store of downloaded images. A
// source (URL plus checksum) is downloaded once however many nodes ask for
// it at the same time; each node holds a reference until Release.
//
// A reference is also a symbolic link, nodes/<node> → ../sha256/<digest>
// (RefPath), so that a restarted conductor still knows which images its
// unfinished deploys hold, and an operator or a test can see them.
type Cache struct {
	dir, blobs, tmp, index, refs string
	max                          int64
	client                       *http.Client
	stall                        time.Duration
	allowed                      []string

	mu      sync.Mutex
	entries map[string]*entry // by sha256
	keys    map[string]string // source key -> sha256
	nodes   map[string]string // node -> sha256
	flights map[string]*flight
}

// NewCache opens (or creates) a cache in opts.Dir. Entries left by a
// previous process are kept; partial downloads are removed, so only one
// Cache may use a directory at a time.
func NewCache(opts CacheOptions) (*Cache, error) {
	c := &Cache{
		dir:     opts.Dir,
		blobs:   filepath.Join(opts.Dir, "sha256"),
		tmp:     filepath.Join(opts.Dir, "tmp"),
		index:   filepath.Join(opts.Dir, "index.json"),
		refs:    filepath.Join(opts.Dir, "nodes"),
		max:     opts.MaxBytes,
		client:  opts.Client,
		stall:   opts.StallTimeout,
		allowed: opts.AllowedPaths,
		entries: map[string]*entry{},
		keys:    map[string]string{},
		nodes:   map[string]string{},
		flights: map[string]*flight{},
	}
	if c.client == nil {
		c.client = opts.Destinations.Client(0)
	}
	if c.stall == 0 {
		c.stall = 2 * time.Minute
	}
	if err := os.RemoveAll(c.tmp); err != nil {
		return nil, fmt.Errorf("image cache: clear partial downloads: %w", err)
	}
	// Only the conductor reads the cache: it writes images to nodes
	// itself. Directories an older version made readable are closed too.
	for _, d := range []string{c.dir, c.blobs, c.tmp, c.refs} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("image cache: %w", err)
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return nil, fmt.Errorf("image cache: %w", err)
		}
	}
	files, err := os.ReadDir(c.blobs)
	if err != nil {
		return nil, fmt.Errorf("image cache: %w", err)
	}
	for _, f := range files {
		info, err := f.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		sha := f.Name()
		c.entries[sha] = &entry{
			Entry:    Entry{Path: filepath.Join(c.blobs, sha), SHA256: sha, Size: info.Size()},
			refs:     map[string]struct{}{},
			lastUsed: info.ModTime(),
		}
	}
	if b, err := os.ReadFile(c.index); err == nil {
		var keys map[string]string
		if json.Unmarshal(b, &keys) == nil {
			for k, sha := range keys {
				if c.entries[sha] != nil {
					c.keys[k] = sha
				}
			}
		}
	}
	if err := c.loadRefs(); err != nil {
		return nil, err
	}
	return c, nil
}

// RefPath is where a cache in dir records that node references an image.
func RefPath(dir, node string) string { return filepath.Join(dir, "nodes", node) }

// loadRefs takes over the references a previous process recorded; links to
// entries that are gone are dropped.
func (c *Cache) loadRefs() error {
	links, err := os.ReadDir(c.refs)
	if err != nil {
		return fmt.Errorf("image cache: %w", err)
	}
	for _, l := range links {
		path := filepath.Join(c.refs, l.Name())
		target, err := os.Readlink(path)
		e := c.entries[filepath.Base(target)]
		if err != nil || e == nil || validNode(l.Name()) != nil {
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("image cache: drop stale reference: %w", err)
			}
			continue
		}
		c.nodes[l.Name()] = e.SHA256
		e.refs[l.Name()] = struct{}{}
	}
	return nil
}

// validNode keeps node names usable as file names of nodes/.
func validNode(node string) error {
	if node == "" || strings.ContainsAny(node, "/\x00") || node == "." || node == ".." || strings.HasPrefix(node, ".ref-") {
		return fmt.Errorf("image cache: invalid node name %q", node)
	}
	return nil
}

// writeRef points nodes/<node> at the entry, replacing the link atomically.
func (c *Cache) writeRef(node, sha string) error {
	tmp := filepath.Join(c.refs, ".ref-"+node)
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Join("..", "sha256", sha), tmp); err != nil {
		return fmt.Errorf("image cache: record reference of %s: %w", node, err)
	}
	if err := os.Rename(tmp, RefPath(c.dir, node)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("image cache: record reference of %s: %w", node, err)
	}
	return nil
}

func sourceKey(src Source, algo, digest string) string {
	return src.URL + "\x00" + algo + ":" + digest
}

// Acquire returns the cached image for src, downloading it if needed, and
// records that node references it (replacing any image node referenced
// before).
func (c *Cache) Acquire(ctx context.Context, node string, src Source) (Entry, error) {
	if err := validNode(node); err != nil {
		return Entry{}, err
	}
	algo, digest, err := src.expected()
	if err != nil {
		return Entry{}, err
	}
	// Checked before the cache too: a file read while its directory was
	// allowed must not be handed out once it no longer is.
	if u, err := url.Parse(src.URL); err == nil && u.Scheme == "file" && src.Open == nil {
		if _, err := CheckLocalPath(u.Path, c.allowed); err != nil {
			return Entry{}, fmt.Errorf("image source: %w", err)
		}
	}
	key := sourceKey(src, algo, digest)
	for {
		c.mu.Lock()
		if sha, ok := c.keys[key]; ok {
			if e := c.entries[sha]; e != nil {
				err := c.refLimitedLocked(node, e, src.MaxSize)
				c.mu.Unlock()
				return e.Entry, err
			}
		}
		f := c.flights[key]
		// A flight without waiters was cancelled by the last one to leave.
		if f == nil || f.waiters == 0 {
			dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
			f = &flight{done: make(chan struct{}), cancel: cancel, max: src.MaxSize}
			c.flights[key] = f
			go c.fetch(dctx, key, src, algo, digest, f)
		}
		f.waiters++
		c.mu.Unlock()

		select {
		case <-f.done:
		case <-ctx.Done():
			c.mu.Lock()
			f.waiters--
			if f.waiters == 0 {
				// Nobody wants this download any more.
				f.cancel()
			}
			c.mu.Unlock()
			return Entry{}, ctx.Err()
		}
		c.mu.Lock()
		f.waiters--
		if errors.Is(f.err, ErrTooLarge) && (src.MaxSize == 0 || src.MaxSize > f.max) {
			// Too large for the node that started the download, not
			// necessarily for this one: download again with its limit.
			c.mu.Unlock()
			continue
		}
		if f.err != nil {
			c.mu.Unlock()
			return Entry{}, f.err
		}
		e := c.entries[f.sha]
		if e == nil {
			// Evicted between the download and our wake-up: go again.
			c.mu.Unlock()
			continue
		}
		err := c.refLimitedLocked(node, e, src.MaxSize)
		c.mu.Unlock()
		return e.Entry, err
	}
}

// refLimitedLocked is refLocked for an entry within max bytes (0: any):
// a cached image may have come for a node with a larger disk.
func (c *Cache) refLimitedLocked(node string, e *entry, max int64) error {
	if max > 0 && e.Size > max {
		return fmt.Errorf("%w: the image has %d bytes, more than the %d allowed", ErrTooLarge, e.Size, max)
	}
	return c.refLocked(node, e)
}

func (c *Cache) refLocked(node string, e *entry) error {
	if c.nodes[node] != e.SHA256 {
		if err := c.writeRef(node, e.SHA256); err != nil {
			return err
		}
	}
	if old, ok := c.nodes[node]; ok && old != e.SHA256 {
		if oe := c.entries[old]; oe != nil {
			delete(oe.refs, node)
		}
	}
	moved := c.nodes[node] != "" && c.nodes[node] != e.SHA256
	c.nodes[node] = e.SHA256
	e.refs[node] = struct{}{}
	e.lastUsed = time.Now()
	if moved {
		// The node's previous image may now be idle and over the bound.
		c.evictLocked("")
	}
	return nil
}

// Release drops node's reference; unreferenced entries become eligible for
// eviction.
func (c *Cache) Release(node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sha, ok := c.nodes[node]; ok {
		delete(c.nodes, node)
		if e := c.entries[sha]; e != nil {
			delete(e.refs, node)
			e.lastUsed = time.Now()
		}
		// A link left behind would only pin the entry after a restart,
		// until the node's next release.
		_ = os.Remove(RefPath(c.dir, node))
	}
	c.evictLocked("")
}

// Size is the total size of the cached entries.
func (c *Cache) Size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, e := range c.entries {
		n += e.Size
	}
	return n
}

// evictLocked removes least recently used unreferenced entries, other than
// keep, until the cache fits its bound.
func (c *Cache) evictLocked(keep string) {
	if c.max <= 0 {
		return
	}
	var total int64
	var idle []*entry
	for _, e := range c.entries {
		total += e.Size
		if len(e.refs) == 0 && e.SHA256 != keep {
			idle = append(idle, e)
		}
	}
	sort.Slice(idle, func(i, j int) bool { return idle[i].lastUsed.Before(idle[j].lastUsed) })
	changed := false
	for _, e := range idle {
		if total <= c.max {
			break
		}
		if err := os.Remove(e.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			continue
		}
		delete(c.entries, e.SHA256)
		total -= e.Size
		changed = true
	}
	if changed {
		for k, sha := range c.keys {
			if c.entries[sha] == nil {
				delete(c.keys, k)
			}
		}
		c.saveIndexLocked()
	}
}

// saveIndexLocked persists which sources map to which content so a
// restarted conductor finds them; losing it only costs a re-download.
func (c *Cache) saveIndexLocked() {
	b, err := json.Marshal(c.keys)
	if err != nil {
		return
	}
	tmp, err := os.CreateTemp(c.tmp, "index-")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), c.index) != nil {
		os.Remove(tmp.Name())
	}
}

// fetch downloads src for flight f and publishes the result.
func (c *Cache) fetch(ctx context.Context, key string, src Source, algo, digest string, f *flight) {
	defer f.cancel()
	sha, size, err := c.download(ctx, src, algo, digest)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.flights[key] == f {
		delete(c.flights, key)
	}
	f.sha, f.err = sha, err
	if err == nil {
		e := c.entries[sha]
		if e == nil {
			e = &entry{
				Entry: Entry{Path: filepath.Join(c.blobs, sha), SHA256: sha, Size: size},
				refs:  map[string]struct{}{},
			}
			c.entries[sha] = e
		}
		e.lastUsed = time.Now()
		c.keys[key] = sha
		c.saveIndexLocked()
		// The waiters have not taken their references yet.
		c.evictLocked(sha)
	}
	close(f.done)
}

// download streams src into a temporary file, checks it and moves it to its
// content address. The temporary file never outlives a failure.
func (c *Cache) download(ctx context.Context, src Source, algo, digest string) (sha string, size int64, err error) {
	rc, err := c.openSource(ctx, src)
	if err != nil {
		return "", 0, err
	}
	defer rc.Close()
	body := &LimitedReader{R: rc, Max: src.MaxSize}
	tmp, err := os.CreateTemp(c.tmp, "download-")
	if err != nil {
		return "", 0, fmt.Errorf("image cache: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	content := sha256.New()
	sparse := &sparseWriter{f: tmp}
	var check hash.Hash
	w := io.MultiWriter(sparse, content)
	if algo != "" && algo != "sha256" {
		check = newHash(algo)
		w = io.MultiWriter(sparse, content, check)
	}
	if size, err = io.CopyBuffer(w, body, make([]byte, 1<<20)); err != nil {
		return "", 0, fmt.Errorf("download %s: %w", redact(src.URL), err)
	}
	if err = tmp.Truncate(size); err != nil {
		return "", 0, fmt.Errorf("image cache: %w", err)
	}
	sha = hex.EncodeToString(content.Sum(nil))
	got := sha
	if check != nil {
		got = hex.EncodeToString(check.Sum(nil))
	}
	if algo != "" && got != digest {
		return "", 0, fmt.Errorf("%w: %s of %s is %s, expected %s", ErrChecksumMismatch, algo, redact(src.URL), got, digest)
	}
	if err = tmp.Sync(); err != nil {
		return "", 0, fmt.Errorf("image cache: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return "", 0, fmt.Errorf("image cache: %w", err)
	}
	if err = os.Rename(tmp.Name(), filepath.Join(c.blobs, sha)); err != nil {
		return "", 0, fmt.Errorf("image cache: %w", err)
	}
	return sha, size, nil
}

// openSource returns the content of src: through its Open, or from its
// URL.
func (c *Cache) openSource(ctx context.Context, src Source) (io.ReadCloser, error) {
	if src.Open == nil {
		return c.open(ctx, src.URL, src.MaxSize)
	}
	ctx, cancel := context.WithCancel(ctx)
	body, err := src.Open(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	return c.stallGuard(body, cancel), nil
}

// stallGuard makes reads from a network body fail once nothing arrives for
// the stall timeout, by cancelling the request's context.
func (c *Cache) stallGuard(body io.ReadCloser, cancel context.CancelFunc) io.ReadCloser {
	return &stallReader{r: body, cancel: cancel, timer: time.AfterFunc(c.stall, cancel), d: c.stall}
}

// open returns the content of a http(s):// or file:// URL; one that says
// it is larger than max bytes (0: any) is refused before its body.
func (c *Cache) open(ctx context.Context, raw string, max int64) (io.ReadCloser, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("image source %q: %w", redact(raw), err)
	}
	switch u.Scheme {
	case "file":
		f, err := OpenLocal(u.Path, c.allowed)
		if err != nil {
			return nil, fmt.Errorf("image source: %w", err)
		}
		return f, nil
	case "http", "https":
	default:
		return nil, fmt.Errorf("%w: image source scheme %q (http, https or file)", ErrUnsupported, u.Scheme)
	}
	ctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("image source %q: %w", redact(raw), err)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("download %s: %w", redact(raw), err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		if resp.StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("%w: %s answered 404 Not Found", ErrNotFound, redact(raw))
		}
		return nil, fmt.Errorf("download %s: HTTP status %s", redact(raw), resp.Status)
	}
	if max > 0 && resp.ContentLength > max {
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("download %s: %w: it has %d bytes, more than the %d allowed", redact(raw), ErrTooLarge, resp.ContentLength, max)
	}
	return c.stallGuard(resp.Body, cancel), nil
}

// stallReader cancels its request when no Read returns data for d.
type stallReader struct {
	r      io.ReadCloser
	cancel context.CancelFunc
	timer  *time.Timer
	d      time.Duration
}

func (s *stallReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 {
		s.timer.Reset(s.d)
	}
	return n, err
}

func (s *stallReader) Close() error {
	s.timer.Stop()
	s.cancel()
	return s.r.Close()
}

// redact drops the query string and user info from a URL for messages:
// temporary URLs carry signatures there.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable URL>"
	}
	u.User = nil
	u.RawQuery = ""
	u.Fragment = ""
	return u.String()
}

// sparseWriter writes a stream into f leaving holes where whole 4 KiB
// blocks are zero: a raw image then takes only the space of its data in the
// cache, and its extents are found with SEEK_DATA instead of reading zeros.
// The caller sets the final size with Truncate.
type sparseWriter struct {
	f   *os.File
	off int64
}

const sparseBlock = 4096

func (s *sparseWriter) Write(p []byte) (int, error) {
	total := len(p)
	for len(p) > 0 {
		// Split at block boundaries of the file, so holes are aligned.
		n := min(len(p), int(sparseBlock-s.off%sparseBlock))
		zero := IsZero(p[:n])
		// Extend the piece over following blocks of the same kind.
		for n < len(p) {
			m := min(len(p)-n, sparseBlock)
			if IsZero(p[n:n+m]) != zero {
				break
			}
			n += m
		}
		if !zero {
			if _, err := s.f.WriteAt(p[:n], s.off); err != nil {
				return total - len(p), err
			}
		}
		s.off += int64(n)
		p = p[n:]
	}
	return total, nil
}
