package conductor_test

import (
	"encoding/json"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

// jsonLog turns log into the logger a conductor run with
// [DEFAULT] log_format = json and debug makes, writing to the returned
// buffer (and the spec's output).
func jsonLog(log *logrus.Logger) *logLines {
	made := logging.New(config.Default{LogFormat: "json", Debug: true})
	lines := &logLines{}
	log.SetFormatter(made.Formatter)
	log.SetLevel(logrus.DebugLevel)
	log.AddHook(logging.MaskHook{})
	log.SetOutput(lines)
	return lines
}

// logLines keeps what a logger wrote, one entry per Write.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Write(p []byte) (int, error) {
	_, _ = GinkgoWriter.Write(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, string(p))
	return len(p), nil
}

func (l *logLines) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lines)
}

// forNode is parse(from) restricted to the lines about node uuid.
func (l *logLines) forNode(uuid string, from int) []map[string]any {
	GinkgoHelper()
	var out []map[string]any
	for _, m := range l.parse(from) {
		if m["node"] == uuid {
			out = append(out, m)
		}
	}
	return out
}

// parse parses the lines from the from-th on, each of which must be one
// JSON object ending the line with the fields every line has.
func (l *logLines) parse(from int) []map[string]any {
	GinkgoHelper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range l.lines[from:] {
		Expect(line).To(HaveSuffix("}\n"))
		Expect(strings.Count(line, "\n")).To(Equal(1), "one entry per line")
		var m map[string]any
		Expect(json.Unmarshal([]byte(line), &m)).To(Succeed(), line)
		Expect(m).To(HaveKey("time"))
		Expect(m).To(HaveKey("level"))
		Expect(m).To(HaveKey("msg"))
		out = append(out, m)
	}
	return out
}

// stateChanges are the provision states the lines record the node moving to.
func stateChanges(lines []map[string]any) []string {
	var out []string
	for _, l := range lines {
		if l["msg"] == "Provision state changed" {
			out = append(out, l["provision_state"].(string))
		}
	}
	return out
}

var _ = Describe("request ids in the conductor's logs", func() {
	for _, backend := range backends {
		Context(backend, func() {
			It("tags every line of an RPC's work, in the worker too, with the RPC's request id", func(ctx SpecContext) {
				e := newEnv(backend)
				lines := jsonLog(e.log)
				c := e.start(ctx, "reqid-"+newUUID()[:8])
				api := e.api(c)
				n := e.createNode(ctx, states.Available)
				const deployID, tearDownID = "req-0b6f4a52-1c1e-4d7a-9a43-6f3e1f0c2d11", "req-7d2c9e10-5b4f-4f3a-8e21-0c9d8b7a6f55"

				Expect(rpc.DoNodeDeploy.Call(rpc.WithRequestID(ctx, deployID), api, rpc.DeployArgs{NodeID: n.UUID})).To(Succeed())
				Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.Active))
				Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())
				deployed := lines.count()
				deploy := lines.forNode(n.UUID, 0)
				Expect(stateChanges(deploy)).To(Equal([]string{string(states.Deploying), string(states.Active)}),
					"the RPC and its worker both logged")
				for _, l := range deploy {
					Expect(l).To(HaveKeyWithValue("request_id", deployID), "%v", l)
				}

				Expect(rpc.DoNodeTearDown.Call(rpc.WithRequestID(ctx, tearDownID), api, rpc.NodeArgs{NodeID: n.UUID})).To(Succeed())
				Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.Available))
				Eventually(e.reservation(ctx, n.UUID)).Should(BeNil())
				tearDown := lines.forNode(n.UUID, deployed)
				Expect(stateChanges(tearDown)).To(ContainElement(string(states.Available)))
				for _, l := range tearDown {
					Expect(l).To(HaveKeyWithValue("request_id", tearDownID), "%v", l)
				}
			})

			It("gives each run of a periodic task its own request id, carried into the nodes it works on", func(ctx SpecContext) {
				e := newEnv(backend)
				lines := jsonLog(e.log)
				short := 300 * time.Millisecond
				e.startWith(ctx, "reqid-"+newUUID()[:8], nil, withPeriodicTasks, func(cfg *config.Config) {
					cfg.Conductor.DeployCallbackTimeout = short
				})
				n := e.createNode(ctx, states.DeployWait, func(n *model.Node) { n.TargetProvisionState = ptr(string(states.Active)) })
				Eventually(e.provisionState(ctx, n.UUID)).Should(Equal(states.DeployFail))
				failed := lines.forNode(n.UUID, 0)
				Expect(stateChanges(failed)).To(ContainElement(string(states.DeployFail)))
				id, _ := failed[0]["request_id"].(string)
				Expect(logging.ValidRequestID(id)).To(BeTrue(), "%v", failed[0])
				for _, l := range failed {
					Expect(l).To(HaveKeyWithValue("request_id", id), "%v", l)
				}

				// runs maps the id of each logged run of the job that failed
				// the node to how many runs logged it.
				runs := func() map[string]int {
					out := map[string]int{}
					for _, l := range lines.parse(0) {
						if l["msg"] == "Periodic task run" && l["job"] == "check_callback_timeouts" {
							out[l["request_id"].(string)]++
						}
					}
					return out
				}
				Eventually(func() int { return len(runs()) }).Should(BeNumerically(">=", 3))
				Expect(runs()).To(HaveKeyWithValue(id, 1), "the node's lines carry the id of the run that failed it")
				Expect(runs()).To(HaveEach(1), "a new id for every run")
			})
		})
	}
})

var _ = Describe("request ids of agent callbacks", Label("tgtd"), func() {
	It("tags the work a heartbeat continues with the heartbeat's id, and sends it to the agent", func(ctx SpecContext) {
		w := newISCSIWorld(ctx, backends[0])
		lines := jsonLog(w.e.log)
		n, _, backing := w.node(ctx, model.JSONObject{"image_source": w.images.URL + "/disk.raw"}, 64)
		const deployID, heartbeatID = "req-3f9a1b2c-4d5e-4f60-8a7b-9c0d1e2f3a4b", "req-5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9"

		w.deployToWait(rpc.WithRequestID(ctx, deployID), n.UUID)
		waiting := lines.count()
		deploy := lines.forNode(n.UUID, 0)
		Expect(stateChanges(deploy)).To(Equal([]string{string(states.Deploying), string(states.DeployWait)}))
		for _, l := range deploy {
			Expect(l).To(HaveKeyWithValue("request_id", deployID), "%v", l)
		}

		stub := w.agentHeartbeat(rpc.WithRequestID(ctx, heartbeatID), n.UUID, backing, nil)
		Eventually(w.e.provisionState(ctx, n.UUID), 3*time.Minute).Should(Equal(states.Active))
		Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
		continued := lines.forNode(n.UUID, waiting)
		Expect(stateChanges(continued)).To(Equal([]string{string(states.Deploying), string(states.Active)}))
		for _, l := range continued {
			Expect(l).To(HaveKeyWithValue("request_id", heartbeatID), "%v", l)
		}
		Expect(stub.sawRequestIDs()).NotTo(BeEmpty())
		Expect(stub.sawRequestIDs()).To(HaveEach(heartbeatID), "every call to the agent names the heartbeat's work")
	})
})
