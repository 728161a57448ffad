package distributed_test

import (
	"fmt"
	"net/http"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/conductors"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/drivers"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/e2e/steps"
)

var _ = Describe("Two conductors", func() {
	It("are both reported alive and serving fake-hardware", func(ctx SpecContext) {
		page, err := drivers.ListDrivers(client, drivers.ListDriversOpts{}).AllPages(ctx)
		Expect(err).NotTo(HaveOccurred())
		ds, err := drivers.ExtractDrivers(page)
		Expect(err).NotTo(HaveOccurred())
		Expect(ds).To(ContainElement(And(
			HaveField("Name", "fake-hardware"),
			HaveField("Hosts", ConsistOf(hostnames())),
		)))

		if !steps.AtLeast(client, 49) {
			return
		}
		cpage, err := conductors.List(client, conductors.ListOpts{Detail: true}).AllPages(ctx)
		Expect(err).NotTo(HaveOccurred())
		cs, err := conductors.ExtractConductors(cpage)
		Expect(err).NotTo(HaveOccurred())
		for _, h := range hostnames() {
			Expect(cs).To(ContainElement(And(
				HaveField("Hostname", h),
				HaveField("Alive", true),
				HaveField("Drivers", ContainElement("fake-hardware")),
			)))
		}
	})

	It("keep every one of 50 concurrent PATCHes of different extra keys", func(ctx SpecContext) {
		const n = 50
		uuid := steps.CreateNode(ctx, client, steps.Name("patch", 0)).UUID
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("key%d", i)
		}
		steps.Parallel(n, keys, func(key string) {
			for {
				_, err := nodes.Update(ctx, client, uuid, nodes.UpdateOpts{
					nodes.UpdateOperation{Op: nodes.AddOp, Path: "/extra/" + key, Value: key},
				}).Extract()
				// 409 NodeLocked asks the client to retry, as Ironic's
				// clients do: the other PATCHes hold the node lock in turn.
				if !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
					Expect(err).NotTo(HaveOccurred(), "PATCH /extra/%s", key)
					return
				}
			}
		})
		node, err := nodes.Get(ctx, client, uuid).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(node.Extra).To(HaveLen(n))
		for _, key := range keys {
			Expect(node.Extra).To(HaveKeyWithValue(key, key))
		}
		steps.Delete(ctx, client, uuid)
	})

	It("spread nodes across both and take every node through its lifecycle", func(ctx SpecContext) {
		// 20 nodes: the chance that a hash ring puts all of them on one of two
		// conductors is 2^-19.
		const n = 20
		uuids := make([]string, n)
		for i := range uuids {
			uuids[i] = steps.CreateNode(ctx, client, steps.Name("dist", i)).UUID
		}

		if steps.AtLeast(client, 49) {
			owners := map[string]int{}
			for _, u := range uuids {
				node, err := nodes.Get(ctx, client, u).Extract()
				Expect(err).NotTo(HaveOccurred())
				Expect(hostnames()).To(ContainElement(node.Conductor), "node %s is mapped to a live conductor", u)
				owners[node.Conductor]++
			}
			Expect(owners).To(HaveLen(2), "nodes per conductor: %v", owners)
		}

		steps.Parallel(n, uuids, func(u string) { steps.Lifecycle(ctx, client, u) })

		By("checking that both conductors deployed nodes")
		ids := map[int64]string{}
		for _, h := range hostnames() {
			id, err := registry.ConductorID(ctx, h)
			Expect(err).NotTo(HaveOccurred())
			ids[id] = h
		}
		deployedBy := map[string]int{}
		for _, u := range uuids {
			id, ok, err := registry.DeployedBy(ctx, u)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue(), "node %s records the conductor that deployed it", u)
			Expect(ids).To(HaveKey(id), "node %s was deployed by one of the two conductors", u)
			deployedBy[ids[id]]++
		}
		Expect(deployedBy).To(HaveLen(2), "nodes deployed per conductor: %v", deployedBy)

		for _, u := range uuids {
			steps.Delete(ctx, client, u)
		}
	})
})
