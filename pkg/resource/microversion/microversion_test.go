package microversion_test

import (
	"net/http"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
)

func headers(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

var _ = Describe("Negotiate", func() {
	It("serves the minimum when no header is sent", func() {
		v, known, err := microversion.Negotiate(http.Header{})
		Expect(err).ToNot(HaveOccurred())
		Expect(known).To(BeTrue())
		Expect(v).To(Equal(microversion.V1(1)))
	})

	It("uses the last baremetal item of the standard header and ignores other services", func() {
		v, _, err := microversion.Negotiate(headers(microversion.HeaderStandard, "compute 2.1, baremetal 1.3, BAREMETAL 1.5, volume 3.0"))
		Expect(err).ToNot(HaveOccurred())
		Expect(v).To(Equal(microversion.V1(5)))
	})

	It("prefers the standard header over the legacy one", func() {
		v, _, err := microversion.Negotiate(headers(microversion.HeaderStandard, "baremetal 1.4", microversion.HeaderLegacy, "1.9"))
		Expect(err).ToNot(HaveOccurred())
		Expect(v).To(Equal(microversion.V1(4)))
	})

	It("falls back to the legacy header when the standard one names no baremetal version", func() {
		v, _, err := microversion.Negotiate(headers(microversion.HeaderStandard, "compute 2.1", microversion.HeaderLegacy, "1.2, 1.6"))
		Expect(err).ToNot(HaveOccurred())
		Expect(v).To(Equal(microversion.V1(6)))
	})

	It("maps latest (any case) to the maximum", func() {
		v, _, err := microversion.Negotiate(headers(microversion.HeaderLegacy, " LaTeSt "))
		Expect(err).ToNot(HaveOccurred())
		Expect(v).To(Equal(microversion.Max))
	})

	It("tolerates surrounding whitespace", func() {
		v, _, err := microversion.Negotiate(headers(microversion.HeaderLegacy, "  1.7 "))
		Expect(err).ToNot(HaveOccurred())
		Expect(v).To(Equal(microversion.V1(7)))
	})

	DescribeTable("rejects malformed values without the range headers",
		func(raw string) {
			_, known, err := microversion.Negotiate(headers(microversion.HeaderLegacy, raw))
			Expect(err).To(HaveOccurred())
			Expect(err.HTTPStatus()).To(Equal(http.StatusNotAcceptable))
			Expect(err.Message).To(Equal("Invalid value for X-OpenStack-Ironic-API-Version header"))
			Expect(known).To(BeFalse())
		},
		Entry("one number", "1"), Entry("three numbers", "1.2.3"), Entry("letters", "abc"),
		Entry("letter minor", "1.x"), Entry("negative", "1.-1"), Entry("empty", ""),
		Entry("plus sign", "1.+2"),
	)

	It("rejects another major version with the range", func() {
		_, known, err := microversion.Negotiate(headers(microversion.HeaderLegacy, "2.0"))
		Expect(known).To(BeTrue())
		Expect(err.Message).To(Equal("Mutually exclusive versions requested. Version 2.0 requested but not supported by this service. The supported version range is: [1.1, " + microversion.Max.String() + "]."))
	})

	DescribeTable("rejects minor versions out of range with the range",
		func(raw string) {
			_, known, err := microversion.Negotiate(headers(microversion.HeaderStandard, "baremetal "+raw))
			Expect(known).To(BeTrue())
			Expect(err.Kind).To(Equal(errs.KindNotAcceptable))
			Expect(err.Message).To(Equal("Version " + raw + " was requested but the minor version is not supported by this service. The supported version range is: [1.1, " + microversion.Max.String() + "]."))
		},
		Entry("too low", "1.0"), Entry("too high", "1.999"),
	)

	It("accepts every version of the range", func() {
		for m := 1; m <= microversion.Max.Minor; m++ {
			v, _, err := microversion.Negotiate(headers(microversion.HeaderLegacy, microversion.V1(m).String()))
			Expect(err).ToNot(HaveOccurred())
			Expect(v.Minor).To(Equal(m))
		}
	})
})

var _ = Describe("RequireAtLeast", func() {
	It("is nil when the version suffices and a 406 naming the version otherwise", func() {
		Expect(microversion.RequireAtLeast(microversion.V1(9), microversion.V1(9))).To(Succeed())
		err := microversion.RequireAtLeast(microversion.V1(8), microversion.V1(9))
		Expect(errs.Status(err)).To(Equal(http.StatusNotAcceptable))
		Expect(errs.Message(err)).To(Equal("Request not acceptable. The minimal required API version should be 1.9"))
	})
})

func FuzzNegotiate(f *testing.F) {
	for _, seed := range []string{"1.1", "latest", "1.999", "2.0", "baremetal 1.5", "1.2.3", "", " 1 . 2", "99999999999.1"} {
		f.Add(seed, seed)
	}
	f.Fuzz(func(t *testing.T, standard, legacy string) {
		h := http.Header{}
		h.Set(microversion.HeaderStandard, standard)
		h.Set(microversion.HeaderLegacy, legacy)
		v, _, err := microversion.Negotiate(h)
		if err != nil {
			if err.HTTPStatus() != http.StatusNotAcceptable {
				t.Fatalf("negotiation error with status %d", err.HTTPStatus())
			}
			return
		}
		if !v.AtLeast(microversion.Min) || !microversion.Max.AtLeast(v) {
			t.Fatalf("negotiated %s outside the served range", v)
		}
	})
}

var _ = Describe("StripsJSONSuffix", func() {
	It("strips only for an explicit legacy header below 1.91", func() {
		v := microversion.V1(5)
		Expect(microversion.StripsJSONSuffix(headers(microversion.HeaderLegacy, "1.5"), v)).To(BeTrue())
		Expect(microversion.StripsJSONSuffix(http.Header{}, v)).To(BeFalse())
		Expect(microversion.StripsJSONSuffix(headers(microversion.HeaderLegacy, "latest"), v)).To(BeFalse())
		Expect(microversion.StripsJSONSuffix(headers(microversion.HeaderStandard, "baremetal 1.5"), v)).To(BeFalse())
		Expect(microversion.StripsJSONSuffix(headers(microversion.HeaderStandard, "baremetal 1.5", microversion.HeaderLegacy, "1.5"), v)).To(BeFalse())
		Expect(microversion.StripsJSONSuffix(headers(microversion.HeaderLegacy, "1.91"), microversion.V1(91))).To(BeFalse())
	})
})
