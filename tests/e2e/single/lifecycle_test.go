package single_test

import (
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/drivers"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/e2e/steps"
)

var _ = Describe("Node lifecycle", func() {
	It("takes a fake-hardware node through manage, provide, active and deleted, then deletes it", func(ctx SpecContext) {
		n := steps.CreateNode(ctx, client, steps.Name("life", 0))
		Expect(n.ProvisionState).To(Equal(string(nodes.Enroll)), "new nodes start in enroll at 1.11+")
		Expect(n.DriverInfo).To(HaveKeyWithValue("fake_password", "******"), "secrets are masked")

		steps.Lifecycle(ctx, client, n.UUID)

		byName, err := nodes.Get(ctx, client, n.Name).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(byName.UUID).To(Equal(n.UUID), "a node is addressable by name")

		steps.Delete(ctx, client, n.UUID)
	})

	It("refuses a provision action the state machine does not allow and leaves the node as it was", func(ctx SpecContext) {
		n := steps.CreateNode(ctx, client, steps.Name("badverb", 0))
		before := steps.EventuallyStable(ctx, client, n.UUID, nodes.Enroll)

		err := nodes.ChangeProvisionState(ctx, client, n.UUID, nodes.ProvisionStateOpts{Target: nodes.TargetActive}).ExtractErr()
		Expect(gophercloud.ResponseCodeIs(err, 400)).To(BeTrue(), "active from enroll: %v", err)

		after, err := nodes.Get(ctx, client, n.UUID).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(after.ProvisionState).To(Equal(before.ProvisionState))
		Expect(after.TargetProvisionState).To(BeEmpty())
		Expect(after.LastError).To(BeEmpty())
		steps.Delete(ctx, client, n.UUID)
	})

	It("lists nodes with their provision states and filters by state", func(ctx SpecContext) {
		a := steps.CreateNode(ctx, client, steps.Name("list", 0))
		b := steps.CreateNode(ctx, client, steps.Name("list", 1))
		steps.Provision(ctx, client, b.UUID, nodes.TargetManage)
		steps.EventuallyStable(ctx, client, b.UUID, nodes.Manageable)

		page, err := nodes.ListDetail(client, nodes.ListOpts{ProvisionState: nodes.Manageable}).AllPages(ctx)
		Expect(err).NotTo(HaveOccurred())
		got, err := nodes.ExtractNodes(page)
		Expect(err).NotTo(HaveOccurred())
		uuids := make([]string, 0, len(got))
		for _, n := range got {
			Expect(n.ProvisionState).To(Equal(string(nodes.Manageable)))
			uuids = append(uuids, n.UUID)
		}
		Expect(uuids).To(ContainElement(b.UUID))
		Expect(uuids).NotTo(ContainElement(a.UUID))

		steps.Delete(ctx, client, a.UUID)
		steps.Delete(ctx, client, b.UUID)
	})

	It("reports the fake-hardware driver and the conductor that serves it", func(ctx SpecContext) {
		page, err := drivers.ListDrivers(client, drivers.ListDriversOpts{}).AllPages(ctx)
		Expect(err).NotTo(HaveOccurred())
		ds, err := drivers.ExtractDrivers(page)
		Expect(err).NotTo(HaveOccurred())
		Expect(ds).To(ContainElement(And(
			HaveField("Name", "fake-hardware"),
			HaveField("Hosts", HaveLen(1)),
		)))
	})
})
