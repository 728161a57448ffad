package errs_test

import (
	"net/http"
	"net/url"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
)

var _ = Describe("OnlyKeys", func() {
	It("names every unexpected key, sorted, in a 400", func() {
		err := errs.OnlyKeys(map[string]any{"target": "active", "zeta": 1, "alpha": 2}, "target")
		Expect(err).To(MatchError("Unexpected arguments: alpha, zeta"))
		Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
		err = errs.OnlyKeys(url.Values{"limit": {"1"}, "zeta": {"1"}, "alpha": {"2"}}, "limit")
		Expect(errs.Message(err)).To(Equal("Unexpected arguments: alpha, zeta"))
	})

	It("passes a body or query holding only allowed keys", func() {
		Expect(errs.OnlyKeys(map[string]any{"target": "active"}, "target", "timeout")).To(Succeed())
		Expect(errs.OnlyKeys(url.Values{"limit": {"1"}}, "limit")).To(Succeed())
		Expect(errs.OnlyKeys(map[string]any{})).To(Succeed())
	})
})
