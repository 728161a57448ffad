package authtoken_test

import (
	"context"
	"fmt"
	"net"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/api-service/authtoken"
	"github.com/ferricbm/ferric/deploy/image/keystonetest"
)

var (
	service  = keystonetest.User{Name: "ironic", Domain: "Default", Password: "service-pw", Project: "service", ProjectDomain: "Default", Roles: []string{"admin", "service"}}
	operator = keystonetest.User{Name: "operator", Domain: "Default", Password: "op-pw", Project: "ops", ProjectDomain: "Default", Roles: []string{"member"}, System: true}
	nova     = keystonetest.User{Name: "nova", Domain: "Default", Password: "nova-pw", Project: "service", ProjectDomain: "Default", Roles: []string{"service"}}
)

func options(url string) authtoken.Options {
	return authtoken.Options{AuthURL: url, Username: service.Name, Password: service.Password, UserDomainName: "Default",
		ProjectName: "service", ProjectDomainName: "Default", CacheTime: time.Hour, CacheSize: 100, Timeout: 10 * time.Second,
		ServiceTokenRoles: []string{"service"}}
}

var _ = Describe("Validator", func() {
	var (
		ks  *keystonetest.Server
		v   *authtoken.Validator
		ctx = context.Background()
	)

	issue := func(u keystonetest.User, system bool) string {
		tok, err := ks.Issue(ctx, u, system)
		Expect(err).NotTo(HaveOccurred())
		return tok
	}

	BeforeEach(func() {
		ks = keystonetest.NewServer(service)
		ks.AddUser(operator)
		ks.AddUser(nova)
		DeferCleanup(ks.Close)
		v = authtoken.New(options(ks.URL))
	})

	It("reads who holds a system-scoped token and its roles, implied ones included", func() {
		id, err := v.Authenticate(ctx, issue(operator, true), "")
		Expect(err).NotTo(HaveOccurred())
		Expect(id.UserName).To(Equal("operator"))
		Expect(id.UserID).NotTo(BeEmpty())
		Expect(id.SystemScope).To(Equal("all"))
		Expect(id.ProjectID).To(BeEmpty())
		Expect(id.Roles).To(ConsistOf("member", "reader"))
		Expect(id.ExpiresAt).To(BeTemporally("~", time.Now().Add(time.Hour), time.Minute))
	})

	It("reads a project-scoped token's project", func() {
		id, err := v.Authenticate(ctx, issue(operator, false), "")
		Expect(err).NotTo(HaveOccurred())
		Expect(id.SystemScope).To(BeEmpty())
		Expect(id.ProjectID).NotTo(BeEmpty())
	})

	It("refuses a missing, unknown, revoked or expired token as unauthorized", func() {
		_, err := v.Authenticate(ctx, "", "")
		Expect(err).To(MatchError(authtoken.ErrUnauthorized))
		_, err = v.Authenticate(ctx, "not-a-token", "")
		Expect(err).To(MatchError(authtoken.ErrUnauthorized))
		Expect(err.Error()).NotTo(ContainSubstring("not-a-token"), "Keystone's 404 names the token; the error must not")

		revoked := issue(operator, true)
		ks.RevokeAll()
		_, err = v.Authenticate(ctx, revoked, "")
		Expect(err).To(MatchError(authtoken.ErrUnauthorized))

		expired := issue(operator, true)
		ks.Expire(expired)
		_, err = v.Authenticate(ctx, expired, "")
		Expect(err).To(MatchError(authtoken.ErrUnauthorized))
	})

	It("asks Keystone once per token while the cache remembers it", func() {
		tok := issue(operator, true)
		for range 5 {
			_, err := v.Authenticate(ctx, tok, "")
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(ks.Validations()).To(Equal(1))
	})

	It("asks Keystone once about a refused token while its refusal is remembered", func() {
		for range 5 {
			_, err := v.Authenticate(ctx, "made-up-token", "")
			Expect(err).To(MatchError(authtoken.ErrUnauthorized))
		}
		Expect(ks.Validations()).To(Equal(1))

		// Refusals have a bound of their own: made-up tokens do not push
		// a valid one out of the cache.
		tok := issue(operator, true)
		_, err := v.Authenticate(ctx, tok, "")
		Expect(err).NotTo(HaveOccurred())
		for i := range options(ks.URL).CacheSize + 1 {
			_, err := v.Authenticate(ctx, fmt.Sprintf("made-up-%d", i), "")
			Expect(err).To(MatchError(authtoken.ErrUnauthorized))
		}
		before := ks.Validations()
		_, err = v.Authenticate(ctx, tok, "")
		Expect(err).NotTo(HaveOccurred())
		Expect(ks.Validations()).To(Equal(before))
	})

	It("asks every time with a cache time of 0, and so notices a revocation at once", func() {
		o := options(ks.URL)
		o.CacheTime = 0
		v = authtoken.New(o)
		tok := issue(operator, true)
		for range 3 {
			_, err := v.Authenticate(ctx, tok, "")
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(ks.Validations()).To(Equal(3))
		ks.RevokeAll()
		_, err := v.Authenticate(ctx, tok, "")
		Expect(err).To(MatchError(authtoken.ErrUnauthorized))
	})

	It("refuses a revoked token once its cache time has passed", func() {
		o := options(ks.URL)
		o.CacheTime = time.Second
		v = authtoken.New(o)
		tok := issue(operator, true)
		_, err := v.Authenticate(ctx, tok, "")
		Expect(err).NotTo(HaveOccurred())
		ks.RevokeAll()
		Eventually(func() error { _, err := v.Authenticate(ctx, tok, ""); return err }).
			WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(MatchError(authtoken.ErrUnauthorized))
	})

	It("never remembers a token past its expiry", func() {
		ks.SetTokenLifetime(time.Second)
		tok := issue(operator, true)
		ks.SetTokenLifetime(time.Hour)
		_, err := v.Authenticate(ctx, tok, "")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error { _, err := v.Authenticate(ctx, tok, ""); return err }).
			WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(MatchError(authtoken.ErrUnauthorized))
	})

	It("forgets the least recently used token past its size", func() {
		o := options(ks.URL)
		o.CacheSize = 2
		v = authtoken.New(o)
		a, b, c := issue(operator, true), issue(operator, true), issue(operator, true)
		for _, tok := range []string{a, b, a, c} {
			_, err := v.Authenticate(ctx, tok, "")
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(ks.Validations()).To(Equal(3))
		_, err := v.Authenticate(ctx, a, "")
		Expect(err).NotTo(HaveOccurred())
		Expect(ks.Validations()).To(Equal(3), "a was used after b, so b went")
		_, err = v.Authenticate(ctx, b, "")
		Expect(err).NotTo(HaveOccurred())
		Expect(ks.Validations()).To(Equal(4))
	})

	Describe("service tokens", func() {
		It("let an expired user token through, not a revoked one", func() {
			user := issue(operator, true)
			ks.Expire(user)
			_, err := v.Authenticate(ctx, user, "")
			Expect(err).To(MatchError(authtoken.ErrUnauthorized))
			id, err := v.Authenticate(ctx, user, issue(nova, false))
			Expect(err).NotTo(HaveOccurred())
			Expect(id.UserName).To(Equal("operator"), "the user's identity is what the request acts as")
			_, err = v.Authenticate(ctx, user, "")
			Expect(err).To(MatchError(authtoken.ErrUnauthorized), "the expired token vouched for once is not remembered")

			revoked := issue(operator, true)
			svc := issue(nova, false)
			ks.RevokeAll()
			_, err = v.Authenticate(ctx, revoked, svc)
			Expect(err).To(MatchError(authtoken.ErrUnauthorized))
		})

		It("must be valid and hold a service role", func() {
			user := issue(operator, true)
			_, err := v.Authenticate(ctx, user, "bogus")
			Expect(err).To(MatchError(authtoken.ErrUnauthorized))
			_, err = v.Authenticate(ctx, user, issue(operator, true))
			Expect(err).To(MatchError(ContainSubstring("service token roles")))
			Expect(err).To(MatchError(authtoken.ErrUnauthorized))
		})
	})

	It("is unavailable, not unauthorized, when Keystone cannot be reached or refuses the API's credentials", func() {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		addr := l.Addr().String()
		Expect(l.Close()).To(Succeed())
		down := authtoken.New(options("http://" + addr + "/v3"))
		_, err = down.Authenticate(ctx, "some-token", "")
		Expect(err).To(MatchError(authtoken.ErrUnavailable))

		o := options(ks.URL)
		o.Password = "wrong-service-password"
		_, err = authtoken.New(o).Authenticate(ctx, issue(operator, true), "")
		Expect(err).To(MatchError(authtoken.ErrUnavailable))
		Expect(err.Error()).To(ContainSubstring("as ironic"))
		Expect(err.Error()).NotTo(ContainSubstring("wrong-service-password"))
	})

	It("gets a new token of its own when Keystone stops accepting the old one", func() {
		tok := issue(operator, true)
		o := options(ks.URL)
		o.CacheTime = 0
		v = authtoken.New(o)
		_, err := v.Authenticate(ctx, tok, "")
		Expect(err).NotTo(HaveOccurred())
		issued := ks.Issued()
		ks.RevokeAll()
		fresh := issue(operator, true)
		_, err = v.Authenticate(ctx, fresh, "")
		Expect(err).NotTo(HaveOccurred())
		Expect(ks.Issued()).To(Equal(issued+2), "the user's fresh token and the service's own")
	})
})
