package distributed_test

import (
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/ports"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/harness"
)

var _ = Describe("Smart NIC ports", func() {
	It("are created, listed and kept naming their card through gophercloud", func(ctx SpecContext) {
		if !steps.AtLeast(client, 53) {
			Skip("the server predates is_smartnic (1.53)")
		}
		n := steps.CreateNode(ctx, client, steps.Name("smartnic", 0))
		smart := true
		card := map[string]any{"hostname": "card-7", "port_id": "rep0-0"}
		p, err := ports.Create(ctx, client, ports.CreateOpts{NodeUUID: n.UUID, Address: harness.RandomMAC(),
			IsSmartNIC: &smart, LocalLinkConnection: card}).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(p.IsSmartNIC).To(BeTrue())
		Expect(p.LocalLinkConnection).To(Equal(card))

		page, err := ports.ListDetail(client, ports.ListOpts{NodeUUID: n.UUID}).AllPages(ctx)
		Expect(err).NotTo(HaveOccurred())
		list, err := ports.ExtractPorts(page)
		Expect(err).NotTo(HaveOccurred())
		Expect(list).To(ConsistOf(And(HaveField("UUID", p.UUID), HaveField("IsSmartNIC", true))))

		_, err = ports.Update(ctx, client, p.UUID, ports.UpdateOpts{ports.UpdateOperation{Op: ports.ReplaceOp,
			Path: "/local_link_connection", Value: map[string]any{"switch_id": "0a:00:00:00:00:01", "port_id": "Eth1"}}}).Extract()
		Expect(gophercloud.ResponseCodeIs(err, 400)).To(BeTrue(), "a Smart NIC port's link without its card: %v", err)
		got, err := ports.Get(ctx, client, p.UUID).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(got.LocalLinkConnection).To(Equal(card))

		_, err = ports.Create(ctx, client, ports.CreateOpts{NodeUUID: n.UUID, Address: harness.RandomMAC(), IsSmartNIC: &smart}).Extract()
		Expect(gophercloud.ResponseCodeIs(err, 400)).To(BeTrue(), "a Smart NIC port without a link: %v", err)

		steps.Delete(ctx, client, n.UUID)
	})
})
