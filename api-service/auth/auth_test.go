package auth_test

import (
	"encoding/base64"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/bcrypt"

	"github.com/ferricbm/ferric/api-service/auth"
)

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

var _ = Describe("htpasswd", func() {
	var users auth.Users

	BeforeEach(func() {
		hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
		Expect(err).NotTo(HaveOccurred())
		users, err = auth.ParseHtpasswd([]byte("# operators\nadmin:" + string(hash) + "\n\n"))
		Expect(err).NotTo(HaveOccurred())
	})

	It("accepts the right password only", func() {
		user, _, ok := users.Authenticate(basic("admin", "pw"))
		Expect(ok).To(BeTrue())
		Expect(user).To(Equal("admin"))
		for _, h := range []string{basic("admin", "nope"), basic("ghost", "pw"), "", "Bearer x", "Basic !!!", "Basic " + base64.StdEncoding.EncodeToString([]byte("nocolon"))} {
			_, _, ok := users.Authenticate(h)
			Expect(ok).To(BeFalse(), h)
		}
	})

	It("refuses non-bcrypt entries and malformed lines", func() {
		_, err := auth.ParseHtpasswd([]byte("admin:{SHA}abc\n"))
		Expect(err).To(MatchError(ContainSubstring("only bcrypt")))
		_, err = auth.ParseHtpasswd([]byte("justaname\n"))
		Expect(err).To(HaveOccurred())
	})
})
