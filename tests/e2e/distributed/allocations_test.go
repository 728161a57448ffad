package distributed_test

import (
	"encoding/json"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/allocations"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/e2e/steps"
)

var _ = Describe("Allocations over two conductors", func() {
	It("give each available node of the class to one allocation only, and free it on delete", func(ctx SpecContext) {
		if !steps.AtLeast(client, 52) {
			Skip("the server predates allocations (1.52)")
		}
		const nodeCount, allocationCount = 6, 8
		class := "e2e-" + steps.Name("alloc", 0)
		uuids := steps.CreateAvailable(ctx, client, "alloc", nodeCount)
		for _, u := range uuids {
			_, err := nodes.Update(ctx, client, u, nodes.UpdateOpts{
				nodes.UpdateOperation{Op: nodes.AddOp, Path: "/resource_class", Value: class},
			}).Extract()
			Expect(err).NotTo(HaveOccurred())
		}

		names := make([]string, allocationCount)
		for i := range names {
			names[i] = steps.Name("alloc", i)
		}
		// All at once, so that both conductors race for the same nodes.
		steps.Parallel(allocationCount, names, func(name string) {
			a, err := allocations.Create(ctx, client, allocations.CreateOpts{
				Name: name, ResourceClass: class, Extra: map[string]string{"by": "e2e"},
			}).Extract()
			Expect(err).NotTo(HaveOccurred())
			Expect(a.State).To(Equal("allocating"))
		})

		settled := map[string]*allocations.Allocation{}
		for _, name := range names {
			Eventually(func(g Gomega) {
				a, err := allocations.Get(ctx, client, name).Extract()
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(a.State).NotTo(Equal("allocating"), "allocation %s", name)
				settled[name] = a
			}).WithContext(ctx).WithTimeout(steps.StateTimeout).Should(Succeed())
		}

		given := map[string]string{}
		for name, a := range settled {
			if a.State == "error" {
				Expect(a.LastError).NotTo(BeEmpty(), "allocation %s", name)
				Expect(a.NodeUUID).To(BeEmpty(), "allocation %s", name)
				continue
			}
			Expect(a.State).To(Equal("active"), "allocation %s", name)
			Expect(uuids).To(ContainElement(a.NodeUUID), "allocation %s", name)
			Expect(given).NotTo(HaveKey(a.NodeUUID), "node %s given to %s and %s", a.NodeUUID, given[a.NodeUUID], name)
			given[a.NodeUUID] = name
			n, err := nodes.Get(ctx, client, a.NodeUUID).Extract()
			Expect(err).NotTo(HaveOccurred())
			Expect(n.AllocationUUID).To(Equal(a.UUID))
			Expect(n.InstanceUUID).To(Equal(a.UUID))
		}
		Expect(given).To(HaveLen(nodeCount), "every node was given out once")

		page, err := allocations.List(client, allocations.ListOpts{ResourceClass: class, State: "active"}).AllPages(ctx)
		Expect(err).NotTo(HaveOccurred())
		listed, err := allocations.ExtractAllocations(page)
		Expect(err).NotTo(HaveOccurred())
		Expect(listed).To(HaveLen(nodeCount))
		Expect(listed).To(HaveEach(HaveField("Extra", HaveKeyWithValue("by", "e2e"))))

		var cli []struct {
			UUID     string `json:"UUID"`
			NodeUUID string `json:"Node UUID"`
		}
		Expect(json.Unmarshal([]byte(ferricctl.Run(ctx, "-f", "json", "allocation", "list", "--resource-class", class, "--state", "active")), &cli)).To(Succeed())
		Expect(cli).To(HaveLen(nodeCount))
		for _, a := range cli {
			Expect(given).To(HaveKey(a.NodeUUID))
			Expect(settled[given[a.NodeUUID]].UUID).To(Equal(a.UUID))
		}

		// Deletes go to the conductor of each allocation's node; half of
		// them through the command line.
		Expect(ferricctl.Run(ctx, append([]string{"allocation", "delete"}, names[:allocationCount/2]...)...)).
			To(ContainSubstring("Deleted allocation " + names[0]))
		for _, name := range names[allocationCount/2:] {
			Expect(allocations.Delete(ctx, client, name).ExtractErr()).To(Succeed())
		}
		for _, name := range names {
			_, err := allocations.Get(ctx, client, name).Extract()
			Expect(gophercloud.ResponseCodeIs(err, 404)).To(BeTrue(), "GET after DELETE of %s: %v", name, err)
		}
		for _, u := range uuids {
			n := steps.EventuallyStable(ctx, client, u, nodes.Available)
			Expect(n.AllocationUUID).To(BeEmpty())
			Expect(n.InstanceUUID).To(BeEmpty())
		}

		By("allocating a freed node again, waiting on the command line")
		var again struct {
			UUID     string `json:"uuid"`
			State    string `json:"state"`
			NodeUUID string `json:"node_uuid"`
		}
		Expect(json.Unmarshal([]byte(ferricctl.Run(ctx, "-f", "json", "allocation", "create", "--resource-class", class, "--wait=30")), &again)).To(Succeed())
		Expect(again.State).To(Equal("active"))
		Expect(uuids).To(ContainElement(again.NodeUUID))

		By("deploying the allocated node and tearing it down, which ends its allocation")
		ferricctl.Run(ctx, "node", "deploy", again.NodeUUID, "--wait=60")
		Expect(steps.EventuallyStable(ctx, client, again.NodeUUID, nodes.Active).AllocationUUID).To(Equal(again.UUID))
		ferricctl.Run(ctx, "node", "undeploy", again.NodeUUID, "--wait=60")
		n := steps.EventuallyStable(ctx, client, again.NodeUUID, nodes.Available)
		Expect(n.AllocationUUID).To(BeEmpty())
		_, err = allocations.Get(ctx, client, again.UUID).Extract()
		Expect(gophercloud.ResponseCodeIs(err, 404)).To(BeTrue(), "the allocation of an undeployed node: %v", err)
		for _, u := range uuids {
			steps.Delete(ctx, client, u)
		}
	})
})
