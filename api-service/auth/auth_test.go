package auth_test

import (
	"encoding/base64"
	"fmt"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/bcrypt"

	"github.com/ferricbm/ferric/api-service/auth"
)

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// comparisons records the hashes an Authenticator compares passwords with.
type comparisons struct {
	mu     sync.Mutex
	hashes [][]byte
}

func (c *comparisons) compare(hash, password []byte) error {
	c.mu.Lock()
	c.hashes = append(c.hashes, hash)
	c.mu.Unlock()
	return bcrypt.CompareHashAndPassword(hash, password)
}

func (c *comparisons) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.hashes)
}

var _ = Describe("htpasswd", func() {
	const cost = bcrypt.MinCost + 1
	var (
		hash  []byte
		a     *auth.Authenticator
		calls *comparisons
	)

	BeforeEach(func() {
		var err error
		hash, err = bcrypt.GenerateFromPassword([]byte("pw"), cost)
		Expect(err).NotTo(HaveOccurred())
		users, err := auth.ParseHtpasswd([]byte("# operators\nadmin:" + string(hash) + "\n\n"))
		Expect(err).NotTo(HaveOccurred())
		a, err = auth.NewAuthenticator(users)
		Expect(err).NotTo(HaveOccurred())
		calls = &comparisons{}
		a.SetCompare(calls.compare)
	})

	It("accepts the right password only", func() {
		user, _, ok := a.Authenticate(basic("admin", "pw"))
		Expect(ok).To(BeTrue())
		Expect(user).To(Equal("admin"))
		for _, h := range []string{basic("admin", "nope"), basic("ghost", "pw"), "", "Bearer x", "Basic !!!", "Basic " + base64.StdEncoding.EncodeToString([]byte("nocolon"))} {
			_, _, ok := a.Authenticate(h)
			Expect(ok).To(BeFalse(), h)
		}
	})

	It("checks a dummy hash of the users' cost for an unknown user", func() {
		_, msg, ok := a.Authenticate(basic("ghost", "pw"))
		Expect(ok).To(BeFalse())
		Expect(msg).To(Equal("Unauthorized"))
		Expect(calls.hashes).To(HaveLen(1), "an unknown user costs one hash comparison, as a known one does")
		Expect(calls.hashes[0]).NotTo(Equal(hash))
		Expect(bcrypt.Cost(calls.hashes[0])).To(Equal(cost))

		_, _, ok = a.Authenticate(basic("ghost", "pw"))
		Expect(ok).To(BeFalse())
		Expect(calls.count()).To(Equal(2), "unknown users are never cached")
	})

	It("hashes a verified credential once, then answers from the cache", func() {
		for range 5 {
			user, _, ok := a.Authenticate(basic("admin", "pw"))
			Expect(ok).To(BeTrue())
			Expect(user).To(Equal("admin"))
		}
		Expect(calls.count()).To(Equal(1))
	})

	It("never caches a wrong password", func() {
		for range 3 {
			_, msg, ok := a.Authenticate(basic("admin", "wrong"))
			Expect(ok).To(BeFalse())
			Expect(msg).To(Equal("Unauthorized"))
		}
		Expect(calls.count()).To(Equal(3))
		_, _, ok := a.Authenticate(basic("admin", "pw"))
		Expect(ok).To(BeTrue())
		_, _, ok = a.Authenticate(basic("admin", "wrong"))
		Expect(ok).To(BeFalse(), "a cached right password does not let a wrong one through")
		_, _, ok = a.Authenticate(basic("admin", "pwx"))
		Expect(ok).To(BeFalse())
		Expect(calls.count()).To(Equal(6))
	})

	It("does not carry a cached credential over to a changed hash", func() {
		_, _, ok := a.Authenticate(basic("admin", "pw"))
		Expect(ok).To(BeTrue())
		newHash, err := bcrypt.GenerateFromPassword([]byte("new"), cost)
		Expect(err).NotTo(HaveOccurred())
		users, err := auth.ParseHtpasswd([]byte("admin:" + string(newHash) + "\n"))
		Expect(err).NotTo(HaveOccurred())
		reloaded, err := auth.NewAuthenticator(users)
		Expect(err).NotTo(HaveOccurred())
		_, _, ok = reloaded.Authenticate(basic("admin", "pw"))
		Expect(ok).To(BeFalse())
		_, _, ok = reloaded.Authenticate(basic("admin", "new"))
		Expect(ok).To(BeTrue())
	})

	It("forgets the oldest credential past its bound", func() {
		var lines string
		for i := range auth.CacheSize + 1 {
			lines += fmt.Sprintf("u%d:%s\n", i, hash)
		}
		users, err := auth.ParseHtpasswd([]byte(lines))
		Expect(err).NotTo(HaveOccurred())
		many, err := auth.NewAuthenticator(users)
		Expect(err).NotTo(HaveOccurred())
		seen := &comparisons{}
		// Every user's hash is the same: skip the real comparison, which
		// would make the spec slow, and count.
		many.SetCompare(func(h, p []byte) error { seen.hashes = append(seen.hashes, h); return nil })
		for i := range auth.CacheSize + 1 {
			_, _, ok := many.Authenticate(basic(fmt.Sprint("u", i), "pw"))
			Expect(ok).To(BeTrue())
		}
		Expect(seen.count()).To(Equal(auth.CacheSize + 1))
		many.Authenticate(basic(fmt.Sprint("u", auth.CacheSize), "pw"))
		Expect(seen.count()).To(Equal(auth.CacheSize+1), "the newest is still cached")
		many.Authenticate(basic("u0", "pw"))
		Expect(seen.count()).To(Equal(auth.CacheSize+2), "the oldest was forgotten")
	})

	It("refuses non-bcrypt entries and malformed lines", func() {
		_, err := auth.ParseHtpasswd([]byte("admin:{SHA}abc\n"))
		Expect(err).To(MatchError(ContainSubstring("only bcrypt")))
		_, err = auth.ParseHtpasswd([]byte("justaname\n"))
		Expect(err).To(HaveOccurred())
	})
})
