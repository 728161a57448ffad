package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/model"
)

var hostSeq atomic.Int64

// uniqueHost names a conductor no other test run uses, so runs sharing the
// broker do not read each other's queues.
func uniqueHost() string {
	return fmt.Sprintf("rpc-test-%s-%d", strings.ToLower(newMessageID()[:10]), hostSeq.Add(1))
}

func testLogger() *logrus.Logger {
	l := logrus.New()
	l.Out = GinkgoWriter
	l.Level = logrus.DebugLevel
	return l
}

// lineBuffer collects log output written from handler goroutines.
type lineBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *lineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// logrus writes one whole entry per Write.
	b.lines = append(b.lines, strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// jsonLines parses every line written so far, failing on one that is not
// a JSON object.
func (b *lineBuffer) jsonLines() []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]map[string]any, 0, len(b.lines))
	for _, l := range b.lines {
		var m map[string]any
		ExpectWithOffset(1, json.Unmarshal([]byte(l), &m)).To(Succeed(), l)
		out = append(out, m)
	}
	return out
}

// handledLine is the line the fake logged through its handler's context
// logger for node, or nil.
func (b *lineBuffer) handledLine(node string) map[string]any {
	for _, l := range b.jsonLines() {
		if l["msg"] == "handled" && l["node"] == node {
			return l
		}
	}
	return nil
}

func errorOf(err error) *errs.Error {
	GinkgoHelper()
	Expect(err).To(HaveOccurred())
	e, ok := errs.As(err)
	Expect(ok).To(BeTrue(), "not a typed error: %v", err)
	return e
}

// transportSpecs are the behaviours every transport must have. open returns
// the transport a conductor serves on and the one the API calls through
// (the same one for in-process, two connections for AMQP); cleanup, when
// set, is registered for each conductor host before it serves.
func transportSpecs(open func() (server, client Transport), cleanup func(host string)) {
	var (
		server, client Transport
		fake           *fakeConductor
		host           string
		cond           Endpoint
		stopServe      func()
		ctx            context.Context
		logs           *lineBuffer
	)

	BeforeEach(func() {
		server, client = open()
		fake = newFakeConductor()
		host = uniqueHost()
		if cleanup != nil {
			cleanup(host)
		}
		ctx = context.Background()
		var err error
		logs = &lineBuffer{}
		log := logging.New(config.Default{LogFormat: "json", Debug: true})
		log.SetOutput(io.MultiWriter(GinkgoWriter, logs))
		stopServe, err = Serve(ctx, server, host, fake.mux(), log)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { stopServe() })
		cond = NewClient(client, 10*time.Second).Conductor(host)
	})

	// send sends a hand-made message as a call, as a non-Go scheduler would.
	send := func(ctx context.Context, msg map[string]any) error {
		body, err := json.Marshal(msg)
		Expect(err).NotTo(HaveOccurred())
		data, err := client.Call(ctx, topicFor(host), body)
		if err != nil {
			return err
		}
		return decodeReply(data, nil)
	}

	It("holds the calls a starting conductor receives until its gate opens, then answers them", func() {
		starting := newFakeConductor()
		startingHost := uniqueHost()
		if cleanup != nil {
			cleanup(startingHost)
		}
		gate := NewGate()
		mux := starting.mux()
		mux.HoldUntil(gate)
		stop, err := Serve(ctx, server, startingHost, mux, testLogger())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stop)
		target := NewClient(client, 10*time.Second).Conductor(startingHost)

		deployed := make(chan error, 1)
		go func() { deployed <- DoNodeDeploy.Call(ctx, target, DeployArgs{NodeID: "n1"}) }()
		Consistently(deployed, 300*time.Millisecond).ShouldNot(Receive(), "no answer before the gate opens")
		Expect(starting.callCount(DoNodeDeploy.Name, "n1")).To(BeZero())
		gate.Open(nil)
		Eventually(deployed, 5*time.Second).Should(Receive(BeNil()))
		Expect(starting.callCount(DoNodeDeploy.Name, "n1")).To(Equal(1))
	})

	It("answers held calls with the error of a conductor that failed to start", func() {
		failing := newFakeConductor()
		failingHost := uniqueHost()
		if cleanup != nil {
			cleanup(failingHost)
		}
		gate := NewGate()
		mux := failing.mux()
		mux.HoldUntil(gate)
		stop, err := Serve(ctx, server, failingHost, mux, testLogger())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stop)
		target := NewClient(client, 10*time.Second).Conductor(failingHost)

		deployed := make(chan error, 1)
		go func() { deployed <- DoNodeDeploy.Call(ctx, target, DeployArgs{NodeID: "n1"}) }()
		Consistently(deployed, 300*time.Millisecond).ShouldNot(Receive())
		gate.Open(errs.New(errs.KindTemporaryFailure, "Conductor %s failed to start.", failingHost))
		var got error
		Eventually(deployed, 5*time.Second).Should(Receive(&got))
		Expect(errorOf(got).Kind).To(Equal(errs.KindTemporaryFailure))
		Expect(failing.callCount(DoNodeDeploy.Name, "n1")).To(BeZero(), "the handler never ran")
	})

	It("round-trips calls with their arguments and results", func() {
		name := "node-1"
		node, err := UpdateNode.Call(ctx, cond, UpdateNodeArgs{
			Node:            model.Node{UUID: "1be26c0b-03f2-4d2e-ae87-c02d7f33c123", Name: &name, Driver: "ipmi"},
			ResetInterfaces: true,
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(node.UUID).To(Equal("1be26c0b-03f2-4d2e-ae87-c02d7f33c123"))
		Expect(node.Name).To(HaveValue(Equal("node-1")))
		Expect(node.Driver).To(Equal("ipmi"))
		Expect(node.Extra).To(HaveKeyWithValue("reset_interfaces", true))

		dev, err := GetBootDevice.Call(ctx, cond, NodeArgs{NodeID: "n1"})
		Expect(err).NotTo(HaveOccurred())
		Expect(dev.BootDevice).To(HaveValue(Equal("pxe")))
		Expect(dev.Persistent).To(HaveValue(BeTrue()))

		devs, err := GetSupportedBootDevices.Call(ctx, cond, NodeArgs{NodeID: "n1"})
		Expect(err).NotTo(HaveOccurred())
		Expect(devs).To(Equal([]string{"pxe", "disk", "cdrom"}))

		res, err := VendorPassthru.Call(ctx, cond, VendorPassthruArgs{NodeID: "n1", Method: "pass_deploy_info", HTTPMethod: "POST", Info: map[string]any{"key": "v"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Async).To(BeTrue())
		Expect(res.Return).To(Equal(map[string]any{"method": "pass_deploy_info", "info": map[string]any{"key": "v"}}))

		port, err := UpdatePort.Call(ctx, cond, PortArgs{Port: model.Port{UUID: "p1", Address: "52:54:00:12:34:56", NodeUUID: "n1"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(port.Address).To(Equal("52:54:00:12:34:56"))
		Expect(port.NodeUUID).To(Equal("n1"))
		Expect(port.PXEEnabled).To(BeTrue())

		Expect(DoNodeDeploy.Call(ctx, cond, DeployArgs{NodeID: "n1", ConfigDrive: map[string]any{"meta_data": map[string]any{}}})).To(Succeed())
		Expect(DoNodeClean.Call(ctx, cond, CleanArgs{NodeID: "n1", CleanSteps: []map[string]any{{"interface": "deploy", "step": "erase_devices"}}})).To(Succeed())
		Expect(Heartbeat.Call(ctx, cond, HeartbeatArgs{NodeID: "n1", CallbackURL: "http://10.0.0.2:9999", AgentVersion: "6.0"})).To(Succeed())
		Expect(fake.callCount(Heartbeat.Name, "n1")).To(Equal(1))
	})

	It("reports each method sent and handled, with its time and error, to the observers", func() {
		type seen struct {
			method  string
			elapsed time.Duration
			err     error
		}
		var mu sync.Mutex
		var sent, handled []seen
		record := func(to *[]seen) Observer {
			return func(method string, elapsed time.Duration, err error) {
				mu.Lock()
				defer mu.Unlock()
				*to = append(*to, seen{method, elapsed, err})
			}
		}
		observedHost := uniqueHost()
		if cleanup != nil {
			cleanup(observedHost)
		}
		mux := fake.mux()
		mux.Observe(record(&handled))
		stop, err := Serve(ctx, server, observedHost, mux, testLogger())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stop)
		observed := NewClient(client, 10*time.Second).WithObserver(record(&sent)).Conductor(observedHost)

		_, err = GetBootDevice.Call(ctx, observed, NodeArgs{NodeID: "n1"})
		Expect(err).NotTo(HaveOccurred())
		Expect(ChangeNodePowerState.Call(ctx, observed, ChangePowerStateArgs{NodeID: "n1", NewState: "power on"})).NotTo(Succeed())

		mu.Lock()
		defer mu.Unlock()
		for _, list := range [][]seen{sent, handled} {
			Expect(list).To(HaveLen(2))
			Expect(list[0].method).To(Equal(GetBootDevice.Name))
			Expect(list[0].err).NotTo(HaveOccurred())
			Expect(list[0].elapsed).To(BeNumerically(">", 0))
			Expect(list[1].method).To(Equal(ChangeNodePowerState.Name))
			Expect(errs.KindOf(list[1].err)).To(Equal(errs.KindNoValidHost))
		}
	})

	It("carries typed errors with their kind, message and status", func() {
		e := errorOf(ChangeNodePowerState.Call(ctx, cond, ChangePowerStateArgs{NodeID: "n1", NewState: "power on"}))
		Expect(e.Kind).To(Equal(errs.KindNoValidHost))
		Expect(e.Message).To(Equal("No conductor for node n1."))
		Expect(e.HTTPStatus()).To(Equal(http.StatusNotFound))

		e = errorOf(DoNodeTearDown.Call(ctx, cond, NodeArgs{NodeID: "n2"}))
		Expect(e.Kind).To(Equal(errs.KindNodeLocked))
		Expect(e.HTTPStatus()).To(Equal(http.StatusConflict))
		Expect(e.Message).To(ContainSubstring("Node n2 is locked by host conductor-1"))

		e = errorOf(DestroyPort.Call(ctx, cond, PortArgs{Port: model.Port{UUID: "p9"}}))
		Expect(e.Kind).To(Equal(errs.KindPortNotFound))
		Expect(e.HTTPStatus()).To(Equal(http.StatusNotFound))

		e = errorOf(Heartbeat.Call(ctx, cond, HeartbeatArgs{NodeID: "n1"}))
		Expect(e.Kind).To(Equal(errs.KindInvalidParameterValue))
		Expect(e.HTTPStatus()).To(Equal(http.StatusBadRequest))
	})

	It("turns untyped errors into a generic internal error that reveals nothing", func() {
		e := errorOf(DestroyNode.Call(ctx, cond, NodeArgs{NodeID: "n1"}))
		Expect(e.Kind).To(Equal(errs.KindInternal))
		Expect(e.HTTPStatus()).To(Equal(http.StatusInternalServerError))
		Expect(e.Error()).NotTo(ContainSubstring("hunter2"))
		Expect(e.Error()).NotTo(ContainSubstring("mysql"))
	})

	It("answers a panicking handler with an internal error and keeps serving", func() {
		e := errorOf(ChangeNodePowerState.Call(ctx, cond, ChangePowerStateArgs{NodeID: "n1", NewState: "panic"}))
		Expect(e.Kind).To(Equal(errs.KindInternal))
		Expect(e.Error()).NotTo(ContainSubstring("hunter2"))

		_, err := GetBootDevice.Call(ctx, cond, NodeArgs{NodeID: "n1"})
		Expect(err).NotTo(HaveOccurred())
	})

	It("refuses a free-form argument holding a number beyond float64 with 400, and carries a stored one in a record", func() {
		_, err := VendorPassthru.Call(ctx, cond, VendorPassthruArgs{NodeID: "n1", Method: "m", HTTPMethod: "POST",
			Info: map[string]any{"n": json.Number("1e400")}})
		Expect(errorOf(err).HTTPStatus()).To(Equal(http.StatusBadRequest))
		Expect(fake.callCount(VendorPassthru.Name, "n1")).To(BeZero())

		// A row an older version wrote must still update and delete.
		port, err := UpdatePort.Call(ctx, cond, PortArgs{Port: model.Port{UUID: "p1", Extra: model.JSONObject{"n": json.Number("1e400")}}})
		Expect(err).NotTo(HaveOccurred())
		Expect(port.Extra).To(HaveKeyWithValue("n", json.Number("1e400")))
	})

	It("delivers casts", func() {
		Expect(ContinueNodeClean.Call(ctx, cond, NodeArgs{NodeID: "n1"})).To(Succeed())
		Expect(ContinueNodeDeploy.Call(ctx, cond, NodeArgs{NodeID: "n2"})).To(Succeed())
		Eventually(fake.cleanedNodes).Should(HaveKeyWithValue("n1", 1))
		Eventually(func() int { return fake.deployedCount("n2") }).Should(Equal(1))
	})

	It("returns from a cast without waiting for the handler", func() {
		open := fake.closeGate()
		DeferCleanup(open)
		Expect(ContinueNodeClean.Call(ctx, cond, NodeArgs{NodeID: "n1"})).To(Succeed())
		Eventually(func() int { return fake.callCount(ContinueNodeClean.Name, "n1") }).Should(Equal(1))
		Expect(fake.cleanedNodes()).To(BeEmpty())
		open()
		Eventually(fake.cleanedNodes).Should(HaveKeyWithValue("n1", 1))
	})

	It("fails a call with MessagingTimeout when the reply misses the deadline, and gives the handler that deadline", func() {
		DeferCleanup(fake.closeGate())
		// The gate holds the handler, so the call times out however long
		// the deadline is; it must be long enough for the message to reach
		// the handler on a loaded machine (a late one is dropped unread).
		callCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		want, _ := callCtx.Deadline()
		e := errorOf(SetBootDevice.Call(callCtx, cond, SetBootDeviceArgs{NodeID: "n1", Device: "pxe"}))
		Expect(e.Kind).To(Equal(errs.KindMessagingTimeout))
		Expect(e.Message).To(ContainSubstring(SetBootDevice.Name))
		Expect(fake.deadline("n1")).To(BeTemporally("~", want, time.Millisecond))
	})

	It("uses the client timeout when the context has no deadline", func() {
		DeferCleanup(fake.closeGate())
		short := NewClient(client, 3*time.Second).Conductor(host)
		e := errorOf(SetBootDevice.Call(ctx, short, SetBootDeviceArgs{NodeID: "n1", Device: "pxe"}))
		Expect(e.Kind).To(Equal(errs.KindMessagingTimeout))
		Expect(fake.deadline("n1")).NotTo(BeZero())
	})

	It("passes the request id to the conductor, and makes one when there is none", func() {
		_, err := GetBootDevice.Call(WithRequestID(ctx, "req-1234"), cond, NodeArgs{NodeID: "n1"})
		Expect(err).NotTo(HaveOccurred())
		Expect(fake.requestID("n1")).To(Equal("req-1234"))

		Expect(ContinueNodeDeploy.Call(WithRequestID(ctx, "req-cast"), cond, NodeArgs{NodeID: "n2"})).To(Succeed())
		Eventually(func() string { return fake.requestID("n2") }).Should(Equal("req-cast"))

		_, err = GetBootDevice.Call(ctx, cond, NodeArgs{NodeID: "n3"})
		Expect(err).NotTo(HaveOccurred())
		Expect(fake.requestID("n3")).To(MatchRegexp(`^req-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`))
	})

	It("hands each handler a logger tagged with the message's request id and method", func() {
		_, err := GetBootDevice.Call(WithRequestID(ctx, "req-1234"), cond, NodeArgs{NodeID: "n1"})
		Expect(err).NotTo(HaveOccurred())
		Expect(ContinueNodeDeploy.Call(WithRequestID(ctx, "req-cast"), cond, NodeArgs{NodeID: "n2"})).To(Succeed())
		Eventually(func() map[string]any { return logs.handledLine("n2") }).ShouldNot(BeNil())

		line := logs.handledLine("n1")
		Expect(line).To(HaveKeyWithValue("request_id", "req-1234"))
		Expect(line).To(HaveKeyWithValue("method", GetBootDevice.Name))
		Expect(line).To(HaveKeyWithValue("conductor", host))
		Expect(line).To(HaveKeyWithValue("level", "info"))
		Expect(line).To(HaveKey("time"))
		Expect(logs.handledLine("n2")).To(HaveKeyWithValue("request_id", "req-cast"))
	})

	It("gives a hand-made message without a request id one of its own", func() {
		Expect(send(ctx, map[string]any{"ferric.version": "1", "version": APIVersion, "method": GetBootDevice.Name,
			"args": map[string]any{"node_id": "n4"}})).To(Succeed())
		Expect(fake.requestID("n4")).To(MatchRegexp(`^req-[0-9a-f-]{36}$`))
		Expect(logs.handledLine("n4")).To(HaveKeyWithValue("request_id", fake.requestID("n4")))
	})

	It("answers 200 concurrent calls each with its own result", func() {
		const n = 200
		var wg sync.WaitGroup
		results := make([]string, n)
		failures := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := ValidateDriverInterfaces.Call(ctx, cond, NodeArgs{NodeID: fmt.Sprintf("node-%d", i)})
				failures[i] = err
				results[i] = r["deploy"].Reason
			}()
		}
		wg.Wait()
		for i := range n {
			Expect(failures[i]).NotTo(HaveOccurred())
			Expect(results[i]).To(Equal(fmt.Sprintf("node node-%d", i)))
		}
	})

	It("rejects unknown methods", func() {
		e := errorOf(send(ctx, map[string]any{"ferric.version": "1", "method": "reboot_the_world", "version": APIVersion, "args": map[string]any{}}))
		Expect(e.Kind).To(Equal(errs.KindInvalidParameterValue))
		Expect(e.Message).To(ContainSubstring("reboot_the_world"))
	})

	It("rejects versions newer than its own or of another major", func() {
		var minor int
		_, err := fmt.Sscanf(APIVersion, "1.%d", &minor)
		Expect(err).NotTo(HaveOccurred())
		for _, v := range []string{fmt.Sprintf("1.%d", minor+1), "2.0", "0.9", "1", "x.y"} {
			e := errorOf(send(ctx, map[string]any{"ferric.version": "1", "method": GetBootDevice.Name, "version": v, "args": map[string]any{"node_id": "n1"}}))
			Expect(e.Kind).To(Equal(errs.KindUnsupportedRPCMethodVersion), "version %s", v)
		}
		e := errorOf(send(ctx, map[string]any{"ferric.version": "2", "method": GetBootDevice.Name, "version": APIVersion, "args": map[string]any{"node_id": "n1"}}))
		Expect(e.Kind).To(Equal(errs.KindUnsupportedRPCMethodVersion))
		Expect(fake.callCount(GetBootDevice.Name, "n1")).To(BeZero())

		Expect(send(ctx, map[string]any{"ferric.version": "1", "method": GetBootDevice.Name, "version": APIVersion, "args": map[string]any{"node_id": "n1"}})).To(Succeed())
		Expect(send(ctx, map[string]any{"ferric.version": "1", "method": GetBootDevice.Name, "version": "1.0", "args": map[string]any{"node_id": "n1"}})).To(Succeed())
	})

	It("rejects malformed messages and arguments", func() {
		data, err := client.Call(ctx, topicFor(host), []byte("not json"))
		Expect(err).NotTo(HaveOccurred())
		Expect(errorOf(decodeReply(data, nil)).Kind).To(Equal(errs.KindInvalidParameterValue))

		e := errorOf(send(ctx, map[string]any{"ferric.version": "1", "method": GetBootDevice.Name, "version": APIVersion, "args": map[string]any{"node_id": 7}}))
		Expect(e.Kind).To(Equal(errs.KindInvalidParameterValue))
		Expect(e.Message).To(ContainSubstring("node_id"))
	})

	It("drops a message whose deadline has already passed", func() {
		callCtx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		err := send(callCtx, map[string]any{
			"ferric.version": "1", "method": GetBootDevice.Name, "version": APIVersion,
			"args": map[string]any{"node_id": "late"}, "deadline": time.Now().Add(-time.Second).Format(time.RFC3339Nano),
		})
		Expect(err).To(MatchError(context.DeadlineExceeded))
		Consistently(func() int { return fake.callCount(GetBootDevice.Name, "late") }, "300ms").Should(BeZero())
	})

	It("fails promptly with TemporaryFailure when no conductor serves the topic", func() {
		nobody := NewClient(client, time.Minute).Conductor(uniqueHost())
		e := errorOf(DoNodeDeploy.Call(ctx, nobody, DeployArgs{NodeID: "n1"}))
		Expect(e.Kind).To(Equal(errs.KindTemporaryFailure))
		Expect(e.HTTPStatus()).To(Equal(http.StatusServiceUnavailable))

		e = errorOf(ContinueNodeClean.Call(ctx, nobody, NodeArgs{NodeID: "n1"}))
		Expect(e.Kind).To(Equal(errs.KindTemporaryFailure))
	})

	It("lets running handlers finish when serving stops", func() {
		open := fake.closeGate()
		Expect(ContinueNodeClean.Call(ctx, cond, NodeArgs{NodeID: "n1"})).To(Succeed())
		Eventually(func() int { return fake.callCount(ContinueNodeClean.Name, "n1") }).Should(Equal(1))
		stopped := make(chan struct{})
		go func() {
			stopServe()
			close(stopped)
		}()
		Consistently(stopped, "200ms").ShouldNot(BeClosed())
		open()
		Eventually(stopped).Should(BeClosed())
		Expect(fake.cleanedNodes()).To(HaveKeyWithValue("n1", 1))
	})
}

var _ = Describe("in-process transport", func() {
	transportSpecs(func() (Transport, Transport) {
		t := NewInProcess()
		DeferCleanup(t.Close)
		return t, t
	}, nil)

	It("refuses a second listener on a topic", func() {
		t := NewInProcess()
		DeferCleanup(t.Close)
		stop, err := t.Listen(context.Background(), "topic", 1, func([]byte) []byte { return nil })
		Expect(err).NotTo(HaveOccurred())
		defer stop()
		_, err = t.Listen(context.Background(), "topic", 1, func([]byte) []byte { return nil })
		Expect(err).To(HaveOccurred())
	})
})
