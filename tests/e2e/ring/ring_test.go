package ring_test

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/harness"
)

// nodeCount nodes, each power call 20 ms: a power sync cycle really waits
// on its BMCs, yet finishes well within its 2 s interval on 16 workers.
const nodeCount = 240

var _ = Describe("A hash ring of conductors sharing slow fake nodes", Ordered, func() {
	var (
		uuids      []string
		conductors = map[string]*harness.Service{}
	)

	BeforeAll(func(ctx SpecContext) {
		for _, name := range []string{"conductor-a", "conductor-b"} {
			c, err := deployment.StartConductor(ctx, name)
			Expect(err).NotTo(HaveOccurred())
			conductors[c.Host] = c
		}
		uuids = make([]string, nodeCount)
		for i := range uuids {
			n, err := nodes.Create(ctx, client, nodes.CreateOpts{
				Name:       steps.Name("ring", i),
				Driver:     "fake-hardware",
				DriverInfo: map[string]any{"fake_latency": "20ms"},
			}).Extract()
			Expect(err).NotTo(HaveOccurred())
			uuids[i] = n.UUID
		}
		// Enrolled nodes are left out of power sync; managed ones are not.
		steps.Parallel(8, uuids, func(u string) {
			steps.Provision(ctx, client, u, nodes.TargetManage)
			steps.EventuallyStable(ctx, client, u, nodes.Manageable)
		})
	}, NodeTimeout(5*time.Minute))

	It("reads every node's power state on exactly the conductor the API names", func(ctx SpecContext) {
		owners := everyNodeOwned(ctx, uuids, conductors)
		Expect(owners).To(HaveLen(2), "both conductors own nodes")
		eventuallySyncedOnOwners(ctx, uuids, conductors)
	}, SpecTimeout(2*time.Minute))

	It("moves a bounded share of the nodes, all of them to a conductor that joins", func(ctx SpecContext) {
		before := ownerOf(ctx, uuids)
		c, err := deployment.StartConductor(ctx, "conductor-c")
		Expect(err).NotTo(HaveOccurred())
		conductors[c.Host] = c

		var after map[string]string
		Eventually(func(g Gomega) {
			after = ownerOf(ctx, uuids)
			g.Expect(after).To(ContainElement(c.Host), "the API maps nodes to %s", c.Host)
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		moved := 0
		for _, u := range uuids {
			if after[u] != before[u] {
				moved++
				Expect(after[u]).To(Equal(c.Host), "node %s moved from %s to a conductor that was already there", u, before[u])
			}
		}
		Expect(moved).To(BeNumerically("<=", nodeCount*3/2/3), "a joiner takes at most 1.5/N of the nodes")
		everyNodeOwned(ctx, uuids, conductors)
		eventuallySyncedOnOwners(ctx, uuids, conductors)
	}, SpecTimeout(3*time.Minute))

	It("moves exactly the nodes of a conductor that leaves", func(ctx SpecContext) {
		before := ownerOf(ctx, uuids)
		var leaving *harness.Service
		for _, c := range conductors {
			if c.Process.Name == "conductor-a" {
				leaving = c
			}
		}
		Expect(leaving.Stop(20 * time.Second)).To(Succeed())
		delete(conductors, leaving.Host)

		var after map[string]string
		Eventually(func(g Gomega) {
			after = ownerOf(ctx, uuids)
			g.Expect(after).NotTo(ContainElement(leaving.Host), "the API still maps nodes to %s", leaving.Host)
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		for _, u := range uuids {
			if before[u] == leaving.Host {
				Expect(after[u]).NotTo(BeEmpty(), "node %s of the leaver has a new owner", u)
			} else {
				Expect(after[u]).To(Equal(before[u]), "node %s of a staying conductor moved", u)
			}
		}
		everyNodeOwned(ctx, uuids, conductors)
		eventuallySyncedOnOwners(ctx, uuids, conductors)
	}, SpecTimeout(3*time.Minute))
})

// ownerOf is the conductor the API names for each node.
func ownerOf(ctx context.Context, uuids []string) map[string]string {
	GinkgoHelper()
	page, err := nodes.List(client, nodes.ListOpts{Fields: []string{"uuid", "conductor"}, Limit: 1000}).AllPages(ctx)
	Expect(err).NotTo(HaveOccurred())
	all, err := nodes.ExtractNodes(page)
	Expect(err).NotTo(HaveOccurred())
	out := make(map[string]string, len(all))
	for _, n := range all {
		out[n.UUID] = n.Conductor
	}
	Expect(out).To(HaveLen(len(uuids)))
	return out
}

// everyNodeOwned checks that the API maps every node to one of the running
// conductors and returns how many each owns.
func everyNodeOwned(ctx context.Context, uuids []string, conductors map[string]*harness.Service) map[string]int {
	GinkgoHelper()
	counts := map[string]int{}
	for u, host := range ownerOf(ctx, uuids) {
		Expect(conductors).To(HaveKey(host), "node %s is mapped to a running conductor", u)
		counts[host]++
	}
	return counts
}

// eventuallySyncedOnOwners waits until each running conductor's latest
// power sync cycle read exactly the nodes the API maps to it: together
// they read every node once, none twice.
func eventuallySyncedOnOwners(ctx context.Context, uuids []string, conductors map[string]*harness.Service) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		owned := map[string]int{}
		for _, host := range ownerOf(ctx, uuids) {
			owned[host]++
		}
		total := 0
		for host, c := range conductors {
			checked, err := lastSyncChecked(c.LogPath)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(checked).To(Equal(owned[host]), "nodes %s read in its last power sync cycle", host)
			total += checked
		}
		g.Expect(total).To(Equal(len(uuids)))
	}).WithContext(ctx).WithTimeout(60 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
}

var checkedField = regexp.MustCompile(`checked"?[=:]([0-9]+)`)

// lastSyncChecked is how many nodes the conductor's latest logged power
// sync cycle read, or -1 before its first cycle.
func lastSyncChecked(logPath string) (int, error) {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return 0, err
	}
	last := -1
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, "Power sync cycle") {
			continue
		}
		if m := checkedField.FindStringSubmatch(line); m != nil {
			if last, err = strconv.Atoi(m[1]); err != nil {
				return 0, err
			}
		}
	}
	return last, nil
}
