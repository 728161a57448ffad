package nodes_test

import (
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/nodes"
	"github.com/ferricbm/ferric/pkg/states"
)

var _ = Describe("traits", func() {
	DescribeTable("accept standard and custom names up to 255 characters",
		func(trait string, ok bool) {
			err := nodes.CheckTrait(trait)
			if ok {
				Expect(err).NotTo(HaveOccurred())
			} else {
				Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
			}
		},
		Entry("a standard trait", "HW_CPU_X86_AVX2", true),
		Entry("a custom trait", "CUSTOM_GPU_2", true),
		Entry("a custom trait of 255 characters", "CUSTOM_"+strings.Repeat("A", 248), true),
		Entry("one character too long", "CUSTOM_"+strings.Repeat("A", 249), false),
		Entry("the bare prefix", "CUSTOM_", false),
		Entry("lower case", "custom_gpu", false),
		Entry("a dash", "CUSTOM_A-B", false),
		Entry("no namespace", "GPU", false),
		Entry("empty", "", false),
	)

	It("decodes a PUT body", func() {
		got, err := nodes.DecodeTraits(map[string]any{"traits": []any{"CUSTOM_A", "HW_NIC_SRIOV"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(Equal([]string{"CUSTOM_A", "HW_NIC_SRIOV"}))
		for _, body := range []map[string]any{{}, {"traits": nil}, {"traits": "CUSTOM_A"}, {"traits": []any{1.0}},
			{"traits": []any{"bad"}}, {"traits": []any{}, "extra": 1.0}} {
			_, err := nodes.DecodeTraits(body)
			Expect(errs.Status(err)).To(Equal(http.StatusBadRequest), "%v", body)
		}
	})
})

var _ = Describe("protection", func() {
	reason := func(s string) *string { return &s }
	It("needs protected for a new reason but lets a reason lapse with it", func() {
		plain := &model.Node{UUID: "n"}
		Expect(errs.Status(nodes.CheckProtection(plain, &model.Node{UUID: "n", ProtectedReason: reason("x")}))).To(Equal(http.StatusBadRequest))
		Expect(nodes.CheckProtection(plain, &model.Node{UUID: "n", Protected: true, ProtectedReason: reason("x")})).To(Succeed())
		held := &model.Node{UUID: "n", Protected: true, ProtectedReason: reason("x")}
		Expect(nodes.CheckProtection(held, &model.Node{UUID: "n", ProtectedReason: reason("x")})).To(Succeed())
	})
})

var _ = Describe("rescue requests", func() {
	It("carry the rescue password to the dispatcher and need one", func() {
		active := &model.Node{UUID: "n", ProvisionState: ptr(string(states.Active))}
		r, err := nodes.DecodeProvision(map[string]any{"target": "rescue", "rescue_password": "pw"})
		Expect(err).NotTo(HaveOccurred())
		event, err := r.Validate(active, microversion.RescueVerbs)
		Expect(err).NotTo(HaveOccurred())
		Expect(event).To(Equal(states.EventRescue))
		Expect(r.RescuePassword()).To(Equal("pw"))
		_, err = r.Validate(active, microversion.V1(37))
		Expect(errs.Status(err)).To(Equal(http.StatusNotAcceptable))

		r, err = nodes.DecodeProvision(map[string]any{"target": "rescue"})
		Expect(err).NotTo(HaveOccurred())
		_, err = r.Validate(active, microversion.RescueVerbs)
		Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
	})
})
