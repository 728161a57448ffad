package conductor_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor"
	"github.com/ferricbm/ferric/conductor/driver/fake"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

// scrape reads the conductor's metrics as Prometheus does.
func scrape(c *conductor.Conductor) string {
	GinkgoHelper()
	srv := httptest.NewServer(c.Metrics())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return string(body)
}

// sample is the value of one series (name and labels exactly as
// exported), -1 when the conductor does not export it.
func sample(c *conductor.Conductor, series string) float64 {
	GinkgoHelper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(scrape(c))
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	Expect(err).NotTo(HaveOccurred())
	return v
}

var _ = Describe("Conductor metrics", func() {
	var e *env
	BeforeEach(func() { e = newEnv(backends[0]) })

	It("count a deploy's transitions and duration, the lock conflicts and RPCs it caused, and the busy workers", func(ctx SpecContext) {
		c := e.start(ctx, "cond-"+e.group)
		api := e.api(c)
		Expect(sample(c, "ferric_workers_size")).To(Equal(8.0))
		Expect(sample(c, "ferric_workers_busy")).To(BeZero())
		n := e.createNode(ctx, states.Available)
		block := make(chan struct{})
		e.hw.Inject(n.UUID, fake.OpDeploy, fake.Fault{Block: block})
		unblock := sync.OnceFunc(func() { close(block) })
		DeferCleanup(unblock)
		Expect(rpc.DoNodeDeploy.Call(ctx, api, rpc.DeployArgs{NodeID: n.UUID})).To(Succeed())
		Expect(sample(c, "ferric_workers_busy")).To(Equal(1.0))

		patched := *e.node(ctx, n.UUID)
		patched.Description = ptr("late")
		_, err := rpc.UpdateNode.Call(ctx, api, rpc.UpdateNodeArgs{Node: patched})
		Expect(errs.KindOf(err)).To(Equal(errs.KindNodeLocked))
		Expect(sample(c, `ferric_node_lock_conflicts_total`)).To(Equal(3.0))
		Expect(sample(c, `ferric_node_lock_wait_seconds_count{result="locked"}`)).To(Equal(1.0))
		Expect(sample(c, `ferric_rpc_server_duration_seconds_count{method="update_node",result="NodeLocked"}`)).To(Equal(1.0))
		Expect(sample(c, `ferric_rpc_server_duration_seconds_count{method="do_node_deploy",result="ok"}`)).To(Equal(1.0))
		Expect(sample(c, `ferric_provision_duration_seconds_count{operation="deploy",result="active"}`)).To(Equal(-1.0))

		unblock()
		Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.Active))
		Eventually(func() float64 { return sample(c, "ferric_workers_busy") }).Should(BeZero())
		Expect(sample(c, `ferric_provision_state_transitions_total{from="available",to="deploying"}`)).To(Equal(1.0))
		Expect(sample(c, `ferric_provision_state_transitions_total{from="deploying",to="active"}`)).To(Equal(1.0))
		Expect(sample(c, `ferric_provision_duration_seconds_count{operation="deploy",result="active"}`)).To(Equal(1.0))
		Expect(sample(c, `ferric_provision_duration_seconds_sum{operation="deploy",result="active"}`)).To(BeNumerically(">", 0))
	})

	It("time a failed clean from its start to clean failed", func(ctx SpecContext) {
		c := e.start(ctx, "cond-"+e.group)
		n := e.createNode(ctx, states.Manageable)
		e.hw.Inject(n.UUID, fake.OpSetPowerState, fake.Fault{Panic: "zap"})
		Expect(rpc.DoNodeClean.Call(ctx, e.api(c), rpc.CleanArgs{NodeID: n.UUID,
			CleanSteps: []map[string]any{{"interface": "deploy", "step": "erase_devices"}}})).To(Succeed())
		Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.CleanFail))
		Expect(sample(c, `ferric_provision_state_transitions_total{from="manageable",to="cleaning"}`)).To(Equal(1.0))
		Expect(sample(c, `ferric_provision_duration_seconds_count{operation="clean",result="clean failed"}`)).To(Equal(1.0))
	})

	It("count the nodes the conductor owns and time each power sync", func(ctx SpecContext) {
		c := e.start(ctx, "cond-"+e.group, withPeriodicTasks)
		e.createNode(ctx, states.Active, func(n *model.Node) { n.PowerState = ptr(states.PowerOn) })
		e.createNode(ctx, states.Manageable, func(n *model.Node) { n.PowerState, n.Maintenance = ptr(states.PowerOff), true })
		Eventually(func() float64 { return sample(c, "ferric_conductor_nodes_owned") }).WithTimeout(30 * time.Second).Should(Equal(2.0))
		Expect(sample(c, "ferric_power_sync_duration_seconds_count")).To(BeNumerically(">=", 1))
		Expect(sample(c, "ferric_power_sync_last_completion_timestamp_seconds")).To(BeNumerically(">", 0))
	})
})
