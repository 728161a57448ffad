package auth_test

import (
	"encoding/base64"
	"fmt"
	"sync"
	"time"

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

const client = "192.0.2.10"

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
		user, refused := a.Authenticate(basic("admin", "pw"), client)
		Expect(refused).To(BeNil())
		Expect(user).To(Equal("admin"))
		for _, h := range []string{basic("admin", "nope"), basic("ghost", "pw"), "", "Bearer x", "Basic !!!", "Basic " + base64.StdEncoding.EncodeToString([]byte("nocolon"))} {
			_, refused := a.Authenticate(h, client)
			Expect(refused).NotTo(BeNil(), h)
		}
	})

	It("checks a dummy hash of the users' cost for an unknown user", func() {
		_, refused := a.Authenticate(basic("ghost", "pw"), client)
		Expect(refused).To(Equal(&auth.Refusal{Message: "Unauthorized"}))
		Expect(calls.hashes).To(HaveLen(1), "an unknown user costs one hash comparison, as a known one does")
		Expect(calls.hashes[0]).NotTo(Equal(hash))
		Expect(bcrypt.Cost(calls.hashes[0])).To(Equal(cost))

		_, refused = a.Authenticate(basic("ghost", "pw"), client)
		Expect(refused).NotTo(BeNil())
		Expect(calls.count()).To(Equal(2), "unknown users are never cached")
	})

	It("hashes a verified credential once, then answers from the cache", func() {
		for range 5 {
			user, refused := a.Authenticate(basic("admin", "pw"), client)
			Expect(refused).To(BeNil())
			Expect(user).To(Equal("admin"))
		}
		Expect(calls.count()).To(Equal(1))
	})

	It("never caches a wrong password", func() {
		for range 3 {
			_, refused := a.Authenticate(basic("admin", "wrong"), client)
			Expect(refused).To(Equal(&auth.Refusal{Message: "Unauthorized"}))
		}
		Expect(calls.count()).To(Equal(3))
		_, refused := a.Authenticate(basic("admin", "pw"), client)
		Expect(refused).To(BeNil())
		_, refused = a.Authenticate(basic("admin", "wrong"), client)
		Expect(refused).NotTo(BeNil(), "a cached right password does not let a wrong one through")
		_, refused = a.Authenticate(basic("admin", "pwx"), client)
		Expect(refused).NotTo(BeNil())
		Expect(calls.count()).To(Equal(6))
	})

	It("does not carry a cached credential over to a changed hash", func() {
		_, refused := a.Authenticate(basic("admin", "pw"), client)
		Expect(refused).To(BeNil())
		newHash, err := bcrypt.GenerateFromPassword([]byte("new"), cost)
		Expect(err).NotTo(HaveOccurred())
		users, err := auth.ParseHtpasswd([]byte("admin:" + string(newHash) + "\n"))
		Expect(err).NotTo(HaveOccurred())
		reloaded, err := auth.NewAuthenticator(users)
		Expect(err).NotTo(HaveOccurred())
		_, refused = reloaded.Authenticate(basic("admin", "pw"), client)
		Expect(refused).NotTo(BeNil())
		_, refused = reloaded.Authenticate(basic("admin", "new"), client)
		Expect(refused).To(BeNil())
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
			_, refused := many.Authenticate(basic(fmt.Sprint("u", i), "pw"), client)
			Expect(refused).To(BeNil())
		}
		Expect(seen.count()).To(Equal(auth.CacheSize + 1))
		many.Authenticate(basic(fmt.Sprint("u", auth.CacheSize), "pw"), client)
		Expect(seen.count()).To(Equal(auth.CacheSize+1), "the newest is still cached")
		many.Authenticate(basic("u0", "pw"), client)
		Expect(seen.count()).To(Equal(auth.CacheSize+2), "the oldest was forgotten")
	})

	Describe("with a clock of the spec's", func() {
		var (
			now   time.Time
			slept []time.Duration
		)
		BeforeEach(func() {
			now = time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
			slept = nil
			a.SetClock(func() time.Time { return now }, func(d time.Duration) { slept = append(slept, d); now = now.Add(d) })
		})

		It("makes every refusal after a comparison last as long as one at the highest cost", func() {
			cheap, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
			Expect(err).NotTo(HaveOccurred())
			users, err := auth.ParseHtpasswd([]byte("admin:" + string(hash) + "\ncheap:" + string(cheap) + "\n"))
			Expect(err).NotTo(HaveOccurred())
			mixed, err := auth.NewAuthenticator(users)
			Expect(err).NotTo(HaveOccurred())
			mixed.SetClock(func() time.Time { return now }, func(d time.Duration) { slept = append(slept, d); now = now.Add(d) })
			// The spec's clock stands still while bcrypt runs: each
			// refusal waits out the whole floor, whoever was tried.
			for _, user := range []string{"cheap", "admin", "ghost"} {
				slept = nil
				_, refused := mixed.Authenticate(basic(user, "wrong"), user)
				Expect(refused).NotTo(BeNil())
				Expect(slept).To(Equal([]time.Duration{mixed.Floor()}), user)
			}
			Expect(mixed.Floor()).To(BeNumerically(">", 0))
			slept = nil
			_, refused := mixed.Authenticate(basic("cheap", "pw"), client)
			Expect(refused).To(BeNil())
			Expect(slept).To(BeEmpty(), "a right password is not slowed down")
		})

		It("refuses a client past its failed logins without a comparison, and lets it try again later", func() {
			for range auth.FailureBurst {
				_, refused := a.Authenticate(basic("admin", "wrong"), client)
				Expect(refused.RetryAfter).To(BeZero())
			}
			checked := calls.count()
			_, refused := a.Authenticate(basic("admin", "pw"), client)
			Expect(refused).NotTo(BeNil())
			Expect(refused.RetryAfter).To(BeNumerically(">", 0))
			Expect(refused.Message).To(ContainSubstring("Too many failed logins"))
			Expect(calls.count()).To(Equal(checked), "a limited client costs no bcrypt")

			_, refused = a.Authenticate(basic("admin", "pw"), "192.0.2.11")
			Expect(refused).To(BeNil(), "another client is not limited")

			now = now.Add(refused2wait(a, client))
			_, refused = a.Authenticate(basic("admin", "pw"), client)
			Expect(refused).To(BeNil())
		})

		It("lets a remembered credential through while its client is limited, and forgets it after a while", func() {
			_, refused := a.Authenticate(basic("admin", "pw"), client)
			Expect(refused).To(BeNil())
			for range auth.FailureBurst {
				a.Authenticate(basic("admin", "wrong"), client)
			}
			checked := calls.count()
			_, refused = a.Authenticate(basic("admin", "pw"), client)
			Expect(refused).To(BeNil())
			Expect(calls.count()).To(Equal(checked))

			now = now.Add(auth.VerifiedFor)
			_, refused = a.Authenticate(basic("admin", "pw"), "192.0.2.12")
			Expect(refused).To(BeNil())
			Expect(calls.count()).To(Equal(checked+1), "checked again once its time was up")
		})
	})

	It("refuses non-bcrypt entries and malformed lines", func() {
		_, err := auth.ParseHtpasswd([]byte("admin:{SHA}abc\n"))
		Expect(err).To(MatchError(ContainSubstring("only bcrypt")))
		_, err = auth.ParseHtpasswd([]byte("justaname\n"))
		Expect(err).To(HaveOccurred())
	})
})

// refused2wait is how long client must wait before it is checked again.
func refused2wait(a *auth.Authenticator, client string) time.Duration {
	_, refused := a.Authenticate(basic("nobody", "x"), client)
	Expect(refused).NotTo(BeNil())
	return refused.RetryAfter
}
