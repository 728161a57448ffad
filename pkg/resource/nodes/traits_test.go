package nodes_test

import (
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/resource/nodes"
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
