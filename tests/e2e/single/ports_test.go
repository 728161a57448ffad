package single_test

import (
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/ports"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/harness"
)

var _ = Describe("Ports", func() {
	It("creates, reads, lists, updates and deletes a port", func(ctx SpecContext) {
		n := steps.CreateNode(ctx, client, steps.Name("port", 0))
		mac := harness.RandomMAC()

		p, err := ports.Create(ctx, client, ports.CreateOpts{
			NodeUUID: n.UUID,
			Address:  mac,
			Extra:    map[string]any{"rack": "r1"},
		}).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(p.UUID).NotTo(BeEmpty())
		Expect(p.NodeUUID).To(Equal(n.UUID))
		Expect(p.Address).To(Equal(mac))
		if steps.AtLeast(client, 19) {
			Expect(p.PXEEnabled).To(BeTrue(), "pxe_enabled defaults to true")
		}

		got, err := ports.Get(ctx, client, p.UUID).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Extra).To(HaveKeyWithValue("rack", "r1"))

		page, err := ports.ListDetail(client, ports.ListOpts{NodeUUID: n.UUID}).AllPages(ctx)
		Expect(err).NotTo(HaveOccurred())
		list, err := ports.ExtractPorts(page)
		Expect(err).NotTo(HaveOccurred())
		Expect(list).To(HaveLen(1))
		Expect(list[0].UUID).To(Equal(p.UUID))

		By("refusing a second port with the same MAC")
		_, err = ports.Create(ctx, client, ports.CreateOpts{NodeUUID: n.UUID, Address: mac}).Extract()
		Expect(gophercloud.ResponseCodeIs(err, 409)).To(BeTrue(), "duplicate MAC: %v", err)

		patch := ports.UpdateOpts{ports.UpdateOperation{Op: ports.ReplaceOp, Path: "/extra/rack", Value: "r2"}}
		if steps.AtLeast(client, 19) {
			patch = append(patch, ports.UpdateOperation{Op: ports.ReplaceOp, Path: "/pxe_enabled", Value: false})
		}
		updated, err := ports.Update(ctx, client, p.UUID, patch).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(updated.Extra).To(HaveKeyWithValue("rack", "r2"))
		if steps.AtLeast(client, 19) {
			Expect(updated.PXEEnabled).To(BeFalse())
		}

		Expect(ports.Delete(ctx, client, p.UUID).ExtractErr()).To(Succeed())
		_, err = ports.Get(ctx, client, p.UUID).Extract()
		Expect(gophercloud.ResponseCodeIs(err, 404)).To(BeTrue(), "GET after DELETE: %v", err)

		steps.Delete(ctx, client, n.UUID)
	})

	It("deletes a node's ports with the node", func(ctx SpecContext) {
		n := steps.CreateNode(ctx, client, steps.Name("portcascade", 0))
		p, err := ports.Create(ctx, client, ports.CreateOpts{NodeUUID: n.UUID, Address: harness.RandomMAC()}).Extract()
		Expect(err).NotTo(HaveOccurred())

		steps.Delete(ctx, client, n.UUID)
		_, err = ports.Get(ctx, client, p.UUID).Extract()
		Expect(gophercloud.ResponseCodeIs(err, 404)).To(BeTrue(), "port of a deleted node: %v", err)
	})
})
