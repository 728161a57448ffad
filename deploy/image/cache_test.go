package image_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/image"
)

// imageServer serves named blobs and counts the requests for each.
type imageServer struct {
	*httptest.Server
	mu       sync.Mutex
	blobs    map[string][]byte
	requests map[string]*atomic.Int64
	// gate, when set, holds every response until it is closed.
	gate chan struct{}
}

func newImageServer() *imageServer {
	s := &imageServer{blobs: map[string][]byte{}, requests: map[string]*atomic.Int64{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		b, ok := s.blobs[r.URL.Path]
		n := s.requests[r.URL.Path]
		if n == nil {
			n = &atomic.Int64{}
			s.requests[r.URL.Path] = n
		}
		gate := s.gate
		s.mu.Unlock()
		n.Add(1)
		if gate != nil {
			select {
			case <-gate:
			case <-r.Context().Done():
				// No answer to a client that gave up: a plain return sends an
				// empty 200 that can race the client's deadline.
				panic(http.ErrAbortHandler)
			}
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		_, _ = w.Write(b)
	}))
	DeferCleanup(s.Close)
	return s
}

func (s *imageServer) add(path string, b []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blobs[path] = b
	return s.URL + path
}

func (s *imageServer) count(path string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.requests[path]; n != nil {
		return n.Load()
	}
	return 0
}

func hexSum(h interface{ Sum([]byte) []byte }) string { return hex.EncodeToString(h.Sum(nil)) }

func sumOf(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// tmpFiles lists what is left in the cache's temporary directory.
func tmpFiles(dir string) []string {
	GinkgoHelper()
	entries, err := os.ReadDir(filepath.Join(dir, "tmp"))
	Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func blobFiles(dir string) []string {
	GinkgoHelper()
	entries, err := os.ReadDir(filepath.Join(dir, "sha256"))
	Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

var _ = Describe("Cache", func() {
	var (
		srv   *imageServer
		dir   string
		files string // the directory file:// sources may come from
		cache *image.Cache
		ctx   context.Context
	)

	newCache := func(max int64) *image.Cache {
		GinkgoHelper()
		c, err := image.NewCache(image.CacheOptions{Dir: dir, MaxBytes: max, AllowedPaths: []string{files}, Destinations: loopback})
		Expect(err).NotTo(HaveOccurred())
		return c
	}

	BeforeEach(func() {
		srv = newImageServer()
		dir = GinkgoT().TempDir()
		files = GinkgoT().TempDir()
		cache = newCache(0)
		ctx = context.Background()
	})

	It("downloads an image once for 20 nodes asking at the same time", func() {
		content := randomBytes(3 << 20)
		url := srv.add("/img.qcow2", content)
		srv.gate = make(chan struct{})
		var wg sync.WaitGroup
		entries := make([]image.Entry, 20)
		errs := make([]error, 20)
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer GinkgoRecover()
				entries[i], errs[i] = cache.Acquire(ctx, fmt.Sprintf("node-%d", i), image.Source{URL: url})
			}()
		}
		Eventually(func() int64 { return srv.count("/img.qcow2") }).Should(BeEquivalentTo(1))
		close(srv.gate)
		wg.Wait()
		for i := range 20 {
			Expect(errs[i]).NotTo(HaveOccurred())
			Expect(entries[i]).To(Equal(entries[0]))
		}
		Expect(srv.count("/img.qcow2")).To(BeEquivalentTo(1))
		Expect(entries[0].SHA256).To(Equal(sumOf(content)))
		Expect(entries[0].Path).To(Equal(filepath.Join(dir, "sha256", sumOf(content))))
		got, err := os.ReadFile(entries[0].Path)
		Expect(err).NotTo(HaveOccurred())
		Expect(sumOf(got)).To(Equal(sumOf(content)))

		// A later node is served from the cache.
		_, err = cache.Acquire(ctx, "node-late", image.Source{URL: url})
		Expect(err).NotTo(HaveOccurred())
		Expect(srv.count("/img.qcow2")).To(BeEquivalentTo(1))
	})

	It("downloads different images concurrently, each once", func() {
		urls := map[string][]byte{}
		for i := range 4 {
			b := randomBytes(512<<10 + i)
			urls[srv.add(fmt.Sprintf("/img-%d", i), b)] = b
		}
		var wg sync.WaitGroup
		var failures atomic.Int64
		n := 0
		for url, b := range urls {
			for range 5 {
				n++
				node := fmt.Sprintf("node-%d", n)
				wg.Add(1)
				go func() {
					defer wg.Done()
					e, err := cache.Acquire(ctx, node, image.Source{URL: url, HashAlgo: "sha256", HashValue: sumOf(b)})
					if err != nil || e.SHA256 != sumOf(b) {
						failures.Add(1)
					}
				}()
			}
		}
		wg.Wait()
		Expect(failures.Load()).To(BeZero())
		for i := range 4 {
			Expect(srv.count(fmt.Sprintf("/img-%d", i))).To(BeEquivalentTo(1))
		}
		Expect(blobFiles(dir)).To(HaveLen(4))
	})

	DescribeTable("verifies checksums",
		func(src func(b []byte) image.Source) {
			b := randomBytes(100 << 10)
			s := src(b)
			s.URL = srv.add("/img", b)
			e, err := cache.Acquire(ctx, "node", s)
			Expect(err).NotTo(HaveOccurred())
			Expect(e.Size).To(BeEquivalentTo(len(b)))
		},
		Entry("image_checksum md5", func(b []byte) image.Source {
			h := md5.Sum(b)
			return image.Source{Checksum: hex.EncodeToString(h[:])}
		}),
		Entry("image_checksum sha512 by length", func(b []byte) image.Source {
			h := sha512.New()
			h.Write(b)
			return image.Source{Checksum: hexSum(h)}
		}),
		Entry("image_checksum algo:hex", func(b []byte) image.Source {
			return image.Source{Checksum: "sha256:" + sumOf(b)}
		}),
		Entry("image_os_hash_algo/value", func(b []byte) image.Source {
			h := sha512.New()
			h.Write(b)
			return image.Source{HashAlgo: "sha512", HashValue: hexSum(h)}
		}),
	)

	It("rejects content that does not match its checksum and keeps nothing", func() {
		url := srv.add("/img", randomBytes(1<<20))
		wrong := md5.Sum([]byte("something else"))
		_, err := cache.Acquire(ctx, "node", image.Source{URL: url, Checksum: hex.EncodeToString(wrong[:])})
		Expect(errors.Is(err, image.ErrChecksumMismatch)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring(hex.EncodeToString(wrong[:])))
		Expect(blobFiles(dir)).To(BeEmpty())
		Expect(tmpFiles(dir)).To(BeEmpty())
		Expect(cache.Size()).To(BeZero())

		// The failure is not cached: a corrected checksum downloads again.
		right := md5.Sum(srv.blobs["/img"])
		_, err = cache.Acquire(ctx, "node", image.Source{URL: url, Checksum: hex.EncodeToString(right[:])})
		Expect(err).NotTo(HaveOccurred())
		Expect(srv.count("/img")).To(BeEquivalentTo(2))
	})

	It("rejects malformed checksums before downloading", func() {
		url := srv.add("/img", []byte("x"))
		_, err := cache.Acquire(ctx, "node", image.Source{URL: url, HashAlgo: "crc32", HashValue: "abcd"})
		Expect(err).To(MatchError(ContainSubstring("unsupported image hash algorithm")))
		_, err = cache.Acquire(ctx, "node", image.Source{URL: url, Checksum: "xyz"})
		Expect(err).To(HaveOccurred())
		Expect(srv.count("/img")).To(BeZero())
	})

	It("reports a missing image clearly", func() {
		_, err := cache.Acquire(ctx, "node", image.Source{URL: srv.URL + "/missing.img?temp_url_sig=secret"})
		Expect(errors.Is(err, image.ErrNotFound)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("404"))
		Expect(err.Error()).To(ContainSubstring("/missing.img"))
		Expect(err.Error()).NotTo(ContainSubstring("secret"))
		Expect(tmpFiles(dir)).To(BeEmpty())

		_, err = cache.Acquire(ctx, "node", image.Source{URL: "file://" + filepath.Join(files, "nonexistent.img")})
		Expect(errors.Is(err, image.ErrNotFound)).To(BeTrue(), "%v", err)
	})

	It("stores the zeros of a download as holes", func() {
		b := make([]byte, 8<<20)
		copy(b[3<<20+100:], randomBytes(50<<10))
		e, err := cache.Acquire(ctx, "node", image.Source{URL: srv.add("/sparse.raw", b)})
		Expect(err).NotTo(HaveOccurred())
		got, err := os.ReadFile(e.Path)
		Expect(err).NotTo(HaveOccurred())
		Expect(sumOf(got)).To(Equal(sumOf(b)))
		var st syscall.Stat_t
		Expect(syscall.Stat(e.Path, &st)).To(Succeed())
		Expect(st.Blocks * 512).To(BeNumerically("<", 1<<20))
	})

	It("caches file:// sources by content", func() {
		b := randomBytes(200 << 10)
		p := filepath.Join(files, "disk.img")
		Expect(os.WriteFile(p, b, 0o644)).To(Succeed())
		e, err := cache.Acquire(ctx, "node-a", image.Source{URL: "file://" + p})
		Expect(err).NotTo(HaveOccurred())
		Expect(e.SHA256).To(Equal(sumOf(b)))
		// The same bytes from HTTP share the entry.
		e2, err := cache.Acquire(ctx, "node-b", image.Source{URL: srv.add("/same", b)})
		Expect(err).NotTo(HaveOccurred())
		Expect(e2.Path).To(Equal(e.Path))
		Expect(blobFiles(dir)).To(HaveLen(1))
	})

	It("reads no file outside the allowed directories, links resolved", func() {
		outside := filepath.Join(GinkgoT().TempDir(), "secret")
		Expect(os.WriteFile(outside, []byte("password=hunter2"), 0o600)).To(Succeed())
		Expect(os.Symlink(outside, filepath.Join(files, "link.img"))).To(Succeed())
		for _, src := range []string{"file:///proc/self/environ", "file://" + outside,
			"file://" + filepath.Join(files, "link.img"), "file://" + files + "/../" + filepath.Base(outside)} {
			_, err := cache.Acquire(ctx, "node", image.Source{URL: src})
			Expect(errors.Is(err, image.ErrFileNotAllowed)).To(BeTrue(), "%s: %v", src, err)
		}
		Expect(blobFiles(dir)).To(BeEmpty())

		By("reading none at all when no directory is allowed, not even from the cache")
		p := filepath.Join(files, "disk.img")
		Expect(os.WriteFile(p, []byte("disk"), 0o644)).To(Succeed())
		_, err := cache.Acquire(ctx, "node", image.Source{URL: "file://" + p})
		Expect(err).NotTo(HaveOccurred())
		strict, err := image.NewCache(image.CacheOptions{Dir: dir})
		Expect(err).NotTo(HaveOccurred())
		_, err = strict.Acquire(ctx, "other", image.Source{URL: "file://" + p})
		Expect(errors.Is(err, image.ErrFileNotAllowed)).To(BeTrue(), "%v", err)
	})

	It("keeps its files from other users", func() {
		_, err := cache.Acquire(ctx, "node", image.Source{URL: srv.add("/img", randomBytes(10<<10))})
		Expect(err).NotTo(HaveOccurred())
		Expect(filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			Expect(err).NotTo(HaveOccurred())
			info, err := os.Lstat(path)
			Expect(err).NotTo(HaveOccurred())
			if info.Mode()&os.ModeSymlink == 0 {
				Expect(info.Mode().Perm()&0o077).To(BeZero(), "%s is %s", path, info.Mode())
			}
			return nil
		})).To(Succeed())
	})

	Describe("size limit", func() {
		// unsized sends a body without Content-Length (chunked), so that
		// only counting what arrives can stop it.
		var unsized *httptest.Server
		BeforeEach(func() {
			unsized = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.(http.Flusher).Flush()
				_, _ = w.Write(randomBytes(64 << 10))
			}))
			DeferCleanup(unsized.Close)
		})

		It("refuses an image announced larger than the limit, leaving nothing behind", func() {
			_, err := cache.Acquire(ctx, "node", image.Source{URL: srv.add("/big", randomBytes(64<<10)), MaxSize: 32 << 10})
			Expect(errors.Is(err, image.ErrTooLarge)).To(BeTrue(), "%v", err)
			Expect(err.Error()).To(ContainSubstring("65536 bytes, more than the 32768 allowed"))
			Expect(tmpFiles(dir)).To(BeEmpty())
			Expect(blobFiles(dir)).To(BeEmpty())
		})

		It("stops a body longer than the limit that gave no size beforehand", func() {
			_, err := cache.Acquire(ctx, "node", image.Source{URL: unsized.URL + "/img", MaxSize: 32 << 10})
			Expect(errors.Is(err, image.ErrTooLarge)).To(BeTrue(), "%v", err)
			By("a source opened by the caller, as Glance images are")
			_, err = cache.Acquire(ctx, "node", image.Source{URL: "glance://x", MaxSize: 32 << 10,
				Open: func(context.Context) (io.ReadCloser, error) {
					return io.NopCloser(bytes.NewReader(randomBytes(64 << 10))), nil
				}})
			Expect(errors.Is(err, image.ErrTooLarge)).To(BeTrue(), "%v", err)
			Expect(tmpFiles(dir)).To(BeEmpty())
			Expect(blobFiles(dir)).To(BeEmpty())
		})

		It("applies to file:// sources and accepts an image of exactly the limit", func() {
			p := filepath.Join(files, "disk.img")
			Expect(os.WriteFile(p, randomBytes(32<<10), 0o644)).To(Succeed())
			_, err := cache.Acquire(ctx, "node", image.Source{URL: "file://" + p, MaxSize: 32<<10 - 1})
			Expect(errors.Is(err, image.ErrTooLarge)).To(BeTrue(), "%v", err)
			Expect(blobFiles(dir)).To(BeEmpty())
			_, err = cache.Acquire(ctx, "node", image.Source{URL: "file://" + p, MaxSize: 32 << 10})
			Expect(err).NotTo(HaveOccurred())
		})

		It("holds for an image cached earlier for a node with a larger disk", func() {
			url := srv.add("/img", randomBytes(64<<10))
			_, err := cache.Acquire(ctx, "large", image.Source{URL: url})
			Expect(err).NotTo(HaveOccurred())
			_, err = cache.Acquire(ctx, "small", image.Source{URL: url, MaxSize: 32 << 10})
			Expect(errors.Is(err, image.ErrTooLarge)).To(BeTrue(), "%v", err)
		})
	})

	It("evicts least recently used unreferenced entries beyond its size bound", func() {
		const size = 1 << 20
		cache = newCache(2*size + size/2) // room for two entries
		a := srv.add("/a", randomBytes(size))
		b := srv.add("/b", randomBytes(size))
		c := srv.add("/c", randomBytes(size))

		ea, err := cache.Acquire(ctx, "n1", image.Source{URL: a})
		Expect(err).NotTo(HaveOccurred())
		eb, err := cache.Acquire(ctx, "n2", image.Source{URL: b})
		Expect(err).NotTo(HaveOccurred())
		// Both referenced: a third entry overshoots the bound, nothing in
		// use is deleted.
		ec, err := cache.Acquire(ctx, "n3", image.Source{URL: c})
		Expect(err).NotTo(HaveOccurred())
		Expect(blobFiles(dir)).To(HaveLen(3))

		cache.Release("n2")
		time.Sleep(10 * time.Millisecond)
		cache.Release("n1")
		// n2's image was released first: it goes.
		Expect(eb.Path).NotTo(BeAnExistingFile())
		Expect(ea.Path).To(BeAnExistingFile())
		Expect(ec.Path).To(BeAnExistingFile())
		Expect(cache.Size()).To(BeNumerically("<=", 2*size+size/2))

		// Asking again downloads again.
		_, err = cache.Acquire(ctx, "n2", image.Source{URL: b})
		Expect(err).NotTo(HaveOccurred())
		Expect(srv.count("/b")).To(BeEquivalentTo(2))
		Expect(srv.count("/a")).To(BeEquivalentTo(1))
	})

	It("moves a node's reference when it acquires another image", func() {
		cache = newCache(1 << 20)
		ea, err := cache.Acquire(ctx, "n1", image.Source{URL: srv.add("/a", randomBytes(600<<10))})
		Expect(err).NotTo(HaveOccurred())
		eb, err := cache.Acquire(ctx, "n1", image.Source{URL: srv.add("/b", randomBytes(600<<10))})
		Expect(err).NotTo(HaveOccurred())
		Expect(ea.Path).NotTo(BeAnExistingFile(), "n1 no longer references a, and a+b exceed the bound")
		Expect(eb.Path).To(BeAnExistingFile())
	})

	It("keeps entries across a restart", func() {
		b := randomBytes(64 << 10)
		url := srv.add("/a", b)
		e, err := cache.Acquire(ctx, "n1", image.Source{URL: url, Checksum: "sha256:" + sumOf(b)})
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(dir, "tmp", "download-stale"), []byte("partial"), 0o644)).To(Succeed())

		restarted := newCache(0)
		Expect(tmpFiles(dir)).To(BeEmpty())
		e2, err := restarted.Acquire(ctx, "n1", image.Source{URL: url, Checksum: "sha256:" + sumOf(b)})
		Expect(err).NotTo(HaveOccurred())
		Expect(e2).To(Equal(e))
		Expect(srv.count("/a")).To(BeEquivalentTo(1))
	})

	It("records each node's reference as a link to the entry until Release, across a restart", func() {
		url := srv.add("/a", randomBytes(64<<10))
		e, err := cache.Acquire(ctx, "n1", image.Source{URL: url})
		Expect(err).NotTo(HaveOccurred())
		_, err = cache.Acquire(ctx, "n2", image.Source{URL: url})
		Expect(err).NotTo(HaveOccurred())
		for _, n := range []string{"n1", "n2"} {
			target, err := filepath.EvalSymlinks(image.RefPath(dir, n))
			Expect(err).NotTo(HaveOccurred())
			Expect(target).To(Equal(e.Path))
		}

		By("a restarted cache keeps the referenced entry out of eviction")
		restarted, err := image.NewCache(image.CacheOptions{Dir: dir, MaxBytes: 1})
		Expect(err).NotTo(HaveOccurred())
		restarted.Release("n1")
		Expect(image.RefPath(dir, "n1")).NotTo(BeAnExistingFile())
		Expect(e.Path).To(BeAnExistingFile(), "n2 still references it")
		restarted.Release("n2")
		Expect(image.RefPath(dir, "n2")).NotTo(BeAnExistingFile())
		Expect(e.Path).NotTo(BeAnExistingFile(), "unreferenced and over the bound")

		By("a link to an entry that is gone is dropped at start")
		Expect(os.Symlink("../sha256/"+strings.Repeat("0", 64), image.RefPath(dir, "n3"))).To(Succeed())
		_, err = image.NewCache(image.CacheOptions{Dir: dir})
		Expect(err).NotTo(HaveOccurred())
		_, err = os.Lstat(image.RefPath(dir, "n3"))
		Expect(err).To(MatchError(os.ErrNotExist))
	})

	It("refuses node names that are not file names", func() {
		_, err := cache.Acquire(ctx, "../escape", image.Source{URL: srv.add("/a", randomBytes(1024))})
		Expect(err).To(MatchError(ContainSubstring("invalid node name")))
	})

	It("abandons a download nobody waits for and leaves no temporary file", func() {
		url := srv.add("/slow", randomBytes(1<<20))
		srv.gate = make(chan struct{})
		defer close(srv.gate)
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error)
		go func() {
			_, err := cache.Acquire(cctx, "n1", image.Source{URL: url})
			done <- err
		}()
		Eventually(func() int64 { return srv.count("/slow") }).Should(BeEquivalentTo(1))
		cancel()
		Eventually(done).Should(Receive(MatchError(context.Canceled)))
		Eventually(func() []string { return tmpFiles(dir) }).Should(BeEmpty())
		Expect(blobFiles(dir)).To(BeEmpty())
	})
})
