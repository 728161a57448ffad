package present_test

import (
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/present"
)

var _ = Describe("representation helpers", func() {
	It("renders timestamps in UTC with microseconds and an offset", func() {
		t := time.Date(2026, 5, 1, 12, 11, 12, 5000, time.FixedZone("CEST", 2*3600))
		Expect(present.Time(&t)).To(Equal("2026-05-01T10:11:12.000005+00:00"))
		Expect(present.Time(nil)).To(BeNil())
		parsed, err := time.Parse(time.RFC3339Nano, present.Time(&t).(string))
		Expect(err).NotTo(HaveOccurred())
		Expect(parsed.Equal(t)).To(BeTrue())
	})

	It("builds self and bookmark links", func() {
		Expect(present.Links("http://h", "ports/x")).To(Equal([]present.Link{
			{Href: "http://h/v1/ports/x", Rel: "self"}, {Href: "http://h/ports/x", Rel: "bookmark"}}))
	})

	It("renders empty dicts as {}", func() {
		Expect(present.Obj(nil)).To(Equal(map[string]any{}))
	})

	It("selects fields and keeps links", func() {
		obj := map[string]any{"a": 1, "b": 2, "links": "l"}
		Expect(present.Select(obj, []string{"b", "zz"})).To(Equal(map[string]any{"b": 2, "links": "l"}))
	})

	It("checks field lists: unknown 400, newer 406", func() {
		cat := []present.Field{{Name: "a", Since: microversion.V1(1)}, {Name: "b", Since: microversion.V1(5)}}
		Expect(present.CheckFields([]string{"a", "b"}, cat, microversion.V1(5))).To(Succeed())
		Expect(errs.Status(present.CheckFields([]string{"b"}, cat, microversion.V1(4)))).To(Equal(http.StatusNotAcceptable))
		err := present.CheckFields([]string{"y", "x"}, cat, microversion.V1(5))
		Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
		Expect(errs.Message(err)).To(Equal(`Field(s) "x, y" are not valid`))
	})
})
