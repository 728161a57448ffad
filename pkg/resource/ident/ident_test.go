package ident_test

import (
	"regexp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/resource/ident"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
)

var _ = Describe("identifiers", func() {
	It("recognises UUID spellings and canonicalises them", func() {
		for _, s := range []string{"1be26c0b-03f2-4d2e-ae87-c02d7f33c123", "1BE26C0B03F24D2EAE87C02D7F33C123"} {
			c, ok := ident.CanonicalUUID(s)
			Expect(ok).To(BeTrue())
			Expect(c).To(Equal("1be26c0b-03f2-4d2e-ae87-c02d7f33c123"))
		}
		for _, s := range []string{"node-1", "1be26c0b-03f2-4d2e-ae87", "{1be26c0b-03f2-4d2e-ae87-c02d7f33c123}", "urn:uuid:1be26c0b-03f2-4d2e-ae87-c02d7f33c123"} {
			Expect(ident.IsUUID(s)).To(BeFalse(), s)
		}
	})

	It("takes as UUID-like what the pattern of groups with optional hyphens takes", func() {
		pattern := regexp.MustCompile(`^(?i:[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12})$`)
		for _, s := range []string{"", "-", "1be26c0b-03f2-4d2e-ae87-c02d7f33c123", "1BE26C0B-03F2-4D2E-AE87-C02D7F33C123",
			"1be26c0b03f2-4d2e-ae87c02d7f33c123", "1be26c0b-03f2-4d2e-ae87-c02d7f33c12", "1be26c0b-03f2-4d2e-ae87-c02d7f33c1234",
			"1be26c0b-03f2-4d2e-ae87-c02d7f33c123-", "-1be26c0b-03f2-4d2e-ae87-c02d7f33c123", "1be26c0b--03f2-4d2e-ae87-c02d7f33c123",
			"1be26c0g-03f2-4d2e-ae87-c02d7f33c123", "1be26c0b-03f2-4d2e-ae87-c02d7f33c12\u212a", "1be26c0b-03f2-4d2e-ae8-7c02d7f33c123",
			"1be26c0b03f24d2eae87c02d7f33c123", "1be26c0b03f24d2eae87c02d7f33c12", "1be26c0b-03f2-4d2e-ae87-c02d7f33c123\n"} {
			Expect(ident.IsUUID(s)).To(Equal(pattern.MatchString(s)), "%q", s)
		}
		c, ok := ident.CanonicalUUID("1be26c0b03f2-4d2e-ae87c02d7f33c123")
		Expect(ok).To(BeFalse(), c)
	})

	DescribeTable("node names by version",
		func(name string, minor int, ok bool) {
			Expect(ident.ValidNodeName(name, microversion.V1(minor))).To(Equal(ok))
		},
		Entry(nil, "node-1", 5, true), Entry(nil, "node-1.example.", 5, true), Entry(nil, "Node_1", 9, false),
		Entry(nil, "Node_1", 10, true), Entry(nil, "a~b.c-d_e", 10, true), Entry(nil, "a b", 10, false),
		Entry(nil, "a/b", 10, false), Entry(nil, "", 10, false), Entry(nil, "detail", 10, false),
		Entry(nil, "states", 5, false), Entry(nil, "1be26c0b-03f2-4d2e-ae87-c02d7f33c123", 10, false),
		Entry(nil, "-bad", 5, false),
	)

	It("normalises MAC addresses", func() {
		mac, ok := ident.NormalizeMAC("AA-BB-CC-DD-EE-FF")
		Expect(ok).To(BeTrue())
		Expect(mac).To(Equal("aa:bb:cc:dd:ee:ff"))
		_, ok = ident.NormalizeMAC("aa:bb:cc:dd:ee:ff:00:11")
		Expect(ok).To(BeFalse())
		_, ok = ident.NormalizeMAC("zz:bb:cc:dd:ee:ff")
		Expect(ok).To(BeFalse())
	})
})
