package apiservice_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	apiservice "github.com/ferricbm/ferric/api-service"
	"github.com/ferricbm/ferric/pkg/model"
)

var _ = Describe("the rules of a node PATCH", func() {
	before := func() *model.Node {
		return &model.Node{UUID: "u", Driver: "fake-hardware", Properties: model.JSONObject{"cpus": 4},
			Extra: model.JSONObject{}, InstanceInfo: model.JSONObject{}, DriverInfo: model.JSONObject{"ipmi_address": "a"}}
	}
	rules := func(change func(n *model.Node)) []string {
		GinkgoHelper()
		after := before()
		change(after)
		got, err := apiservice.NodeUpdateRules(before(), after)
		Expect(err).NotTo(HaveOccurred())
		return got
	}

	It("asks only the rules of the fields changed, the generic rule only for others or for no change", func() {
		Expect(rules(func(n *model.Node) { n.Properties["cpus"] = 8 })).To(Equal([]string{"baremetal:node:update:properties"}))
		Expect(rules(func(n *model.Node) { n.Properties["cpus"] = 8; n.Extra["a"] = "b" })).
			To(Equal([]string{"baremetal:node:update_extra", "baremetal:node:update:properties"}))
		d := "rack 4"
		Expect(rules(func(n *model.Node) { n.Description = &d; n.Extra["a"] = "b" })).
			To(Equal([]string{"baremetal:node:update_extra", "baremetal:node:update"}))
		Expect(rules(func(*model.Node) {})).To(Equal([]string{"baremetal:node:update"}))
	})

	It("guards interfaces, maintenance and turning cleaning off with their own rules", func() {
		raid := "no-raid"
		Expect(rules(func(n *model.Node) { n.RAIDInterface = &raid })).To(Equal([]string{"baremetal:node:update:driver_interfaces"}))
		Expect(rules(func(n *model.Node) { n.Maintenance = true })).To(Equal([]string{"baremetal:node:set_maintenance"}))
		off, on := false, true
		Expect(rules(func(n *model.Node) { n.AutomatedClean = &off })).To(Equal([]string{"baremetal:node:disable_cleaning"}))
		Expect(rules(func(n *model.Node) { n.AutomatedClean = &on })).To(Equal([]string{"baremetal:node:update"}))
	})
})
