package rpc

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/rpc/rpctest"
)

func newTestAMQP() Transport {
	GinkgoHelper()
	t, err := NewAMQP(rpctest.AMQPURL(), testLogger())
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(t.Close)
	return t
}

// deleteQueueAfter removes a test conductor's durable queue at the end of
// the spec, so test runs leave nothing behind in the broker.
func deleteQueueAfter(host string) {
	DeferCleanup(func() {
		conn, err := amqp.Dial(rpctest.AMQPURL())
		Expect(err).NotTo(HaveOccurred())
		defer conn.Close()
		ch, err := conn.Channel()
		Expect(err).NotTo(HaveOccurred())
		_, err = ch.QueueDelete(topicFor(host), false, false, false)
		Expect(err).NotTo(HaveOccurred())
	})
}

// dropConnections makes the broker close the connections of the given AMQP
// transports at once, as a broker restart would, leaving other processes'
// connections alone.
func dropConnections(ts ...Transport) {
	GinkgoHelper()
	out, err := exec.Command("rabbitmqctl", "-q", "list_connections", "--no-table-headers", "pid", "client_properties").Output()
	Expect(err).NotTo(HaveOccurred())
	var closing []*exec.Cmd
	for _, line := range strings.Split(string(out), "\n") {
		pid, props, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		for _, t := range ts {
			if strings.Contains(props, fmt.Sprintf("%q", t.(*amqpTransport).name)) {
				cmd := exec.Command("rabbitmqctl", "-q", "close_connection", pid, "rpc test: simulated broker restart")
				Expect(cmd.Start()).To(Succeed())
				closing = append(closing, cmd)
			}
		}
	}
	Expect(closing).To(HaveLen(len(ts)))
	for _, cmd := range closing {
		Expect(cmd.Wait()).To(Succeed())
		GinkgoWriter.Printf("%s: %s\n", time.Now().Format(time.StampMilli), strings.Join(cmd.Args, " "))
	}
}

// queuedMessages is how many messages the broker holds in the conductor's
// queue, ready or delivered and not yet acknowledged.
func queuedMessages(host string) int {
	GinkgoHelper()
	out, err := exec.Command("rabbitmqctl", "-q", "list_queues", "--no-table-headers", "name", "messages").Output()
	Expect(err).NotTo(HaveOccurred())
	for _, line := range strings.Split(string(out), "\n") {
		if name, count, ok := strings.Cut(line, "\t"); ok && name == topicFor(host) {
			n, err := strconv.Atoi(strings.TrimSpace(count))
			Expect(err).NotTo(HaveOccurred())
			return n
		}
	}
	Fail("no queue " + topicFor(host))
	return 0
}

var _ = Describe("AMQP transport", func() {
	transportSpecs(func() (Transport, Transport) {
		return newTestAMQP(), newTestAMQP()
	}, deleteQueueAfter)

	It("fails to start with a wrong broker address", func() {
		_, err := NewAMQP("amqp://guest:guest@127.0.0.1:1/", nil)
		Expect(err).To(HaveOccurred())
	})

	Context("across conductor and broker restarts", func() {
		var (
			server, client Transport
			host           string
			cond           Endpoint
			ctx            context.Context
		)

		BeforeEach(func() {
			server, client = newTestAMQP(), newTestAMQP()
			host = uniqueHost()
			deleteQueueAfter(host)
			ctx = context.Background()
			cond = NewClient(client, 30*time.Second).Conductor(host)
		})

		serve := func(fake *fakeConductor) {
			stop, err := Serve(ctx, server, host, fake.mux(), testLogger())
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(stop)
		}

		It("keeps calls, whose arguments may hold credentials, off the broker's disk, and casts on it", func() {
			conn, err := amqp.Dial(rpctest.AMQPURL())
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(conn.Close)
			ch, err := conn.Channel()
			Expect(err).NotTo(HaveOccurred())
			// The conductor's queue, as the conductor declares it, with
			// nobody consuming it.
			_, err = ch.QueueDeclare(topicFor(host), true, false, false, false, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(ch.QueueBind(topicFor(host), topicFor(host), exchangeName, false, nil)).To(Succeed())

			callCtx, cancel := context.WithTimeout(ctx, time.Minute)
			DeferCleanup(cancel)
			go func() {
				_ = Heartbeat.Call(callCtx, cond, HeartbeatArgs{NodeID: "n1", CallbackURL: "http://10.0.0.2:9999", AgentToken: "s3cret-token"})
			}()
			var call amqp.Delivery
			Eventually(func() bool {
				var ok bool
				call, ok, err = ch.Get(topicFor(host), true)
				Expect(err).NotTo(HaveOccurred())
				return ok
			}).Should(BeTrue())
			Expect(string(call.Body)).To(ContainSubstring(Heartbeat.Name))
			Expect(call.DeliveryMode).To(Equal(amqp.Transient))

			Expect(ContinueNodeDeploy.Call(ctx, cond, NodeArgs{NodeID: "n1"})).To(Succeed())
			cast, ok, err := ch.Get(topicFor(host), true)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue())
			Expect(string(cast.Body)).To(ContainSubstring(ContinueNodeDeploy.Name))
			Expect(cast.DeliveryMode).To(Equal(amqp.Persistent))
		})

		It("runs a message published twice with one message id once, and answers both", func() {
			fake := newFakeConductor()
			serve(fake)
			conn, err := amqp.Dial(rpctest.AMQPURL())
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(conn.Close)
			ch, err := conn.Channel()
			Expect(err).NotTo(HaveOccurred())
			q, err := ch.QueueDeclare("", false, true, true, false, nil)
			Expect(err).NotTo(HaveOccurred())
			replies, err := ch.Consume(q.Name, "", true, true, false, false, nil)
			Expect(err).NotTo(HaveOccurred())

			body, err := encodeRequest(WithRequestID(ctx, "req-twice"), SetBootDevice.Name, SetBootDeviceArgs{NodeID: "twice", Device: "pxe"}, time.Now().Add(time.Minute))
			Expect(err).NotTo(HaveOccurred())
			id := newMessageID()
			for _, corr := range []string{"first", "second"} {
				Expect(ch.PublishWithContext(ctx, exchangeName, topicFor(host), true, false, amqp.Publishing{
					ContentType: contentType, MessageId: id, CorrelationId: corr, ReplyTo: q.Name, Body: body,
				})).To(Succeed())
			}
			answered := map[string]error{}
			for range 2 {
				var d amqp.Delivery
				Eventually(replies).Should(Receive(&d))
				answered[d.CorrelationId] = decodeReply(d.Body, nil)
			}
			Expect(answered).To(Equal(map[string]error{"first": nil, "second": nil}))
			Expect(fake.callCount(SetBootDevice.Name, "twice")).To(Equal(1))
		})

		It("runs a call redelivered after the conductor's connection was lost once", func() {
			fake := newFakeConductor()
			open := fake.closeGate()
			serve(fake)
			DeferCleanup(open)

			callDone := make(chan error, 1)
			go func() {
				callDone <- SetBootDevice.Call(ctx, cond, SetBootDeviceArgs{NodeID: "redelivered", Device: "pxe"})
			}()
			Eventually(func() int { return fake.callCount(SetBootDevice.Name, "redelivered") }).Should(Equal(1))
			// The broker requeues the unacknowledged request and delivers it
			// again once the conductor has reconnected, while the first
			// handling still runs.
			dropConnections(server)
			open()

			Eventually(callDone, "60s").Should(Receive(BeNil()))
			// Only the redelivery can be acknowledged (the first delivery's
			// channel is gone): an empty queue means it was handled.
			Eventually(func() int { return queuedMessages(host) }, "60s").Should(BeZero())
			Expect(fake.callCount(SetBootDevice.Name, "redelivered")).To(Equal(1))
		})

		// dyingConductor consumes the conductor's queue as a conductor
		// process would, and returns the first request it receives,
		// unacknowledged, with a kill that closes its connection: the
		// broker then delivers the request again, flagged redelivered, to
		// whichever process serves the hostname next.
		dyingConductor := func(send func()) (amqp.Delivery, func()) {
			GinkgoHelper()
			conn, err := amqp.Dial(rpctest.AMQPURL())
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() { _ = conn.Close() })
			ch, err := conn.Channel()
			Expect(err).NotTo(HaveOccurred())
			_, err = ch.QueueDeclare(topicFor(host), true, false, false, false, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(ch.QueueBind(topicFor(host), topicFor(host), exchangeName, false, nil)).To(Succeed())
			deliveries, err := ch.Consume(topicFor(host), "", false, false, false, false, nil)
			Expect(err).NotTo(HaveOccurred())
			send()
			var d amqp.Delivery
			Eventually(deliveries).Should(Receive(&d))
			return d, func() { Expect(conn.Close()).To(Succeed()) }
		}

		It("does not run a call redelivered to a new conductor process, and answers it 503", func() {
			callDone := make(chan error, 1)
			first, kill := dyingConductor(func() {
				go func() {
					callDone <- SetBootDevice.Call(ctx, cond, SetBootDeviceArgs{NodeID: "killed", Device: "pxe"})
				}()
			})
			Expect(first.Redelivered).To(BeFalse())

			fake := newFakeConductor()
			serve(fake)
			kill()

			var err error
			Eventually(callDone, "30s").Should(Receive(&err))
			Expect(errorOf(err).Kind).To(Equal(errs.KindTemporaryFailure))
			Expect(errorOf(err).HTTPStatus()).To(Equal(503))
			Eventually(func() int { return queuedMessages(host) }, "30s").Should(BeZero())
			Expect(fake.callCount(SetBootDevice.Name, "killed")).To(BeZero())
		})

		It("runs a cast redelivered to a new conductor process", func() {
			_, kill := dyingConductor(func() {
				Expect(ContinueNodeClean.Call(ctx, cond, NodeArgs{NodeID: "killed"})).To(Succeed())
			})
			fake := newFakeConductor()
			serve(fake)
			kill()
			Eventually(fake.cleanedNodes, "30s").Should(Equal(map[string]int{"killed": 1}))
		})

		It("keeps casts sent while the conductor is down and delivers them when it is back", func() {
			first := newFakeConductor()
			stop, err := Serve(ctx, server, host, first.mux(), testLogger())
			Expect(err).NotTo(HaveOccurred())
			stop()

			for i := range 10 {
				Expect(ContinueNodeClean.Call(ctx, cond, NodeArgs{NodeID: fmt.Sprintf("n%d", i)})).To(Succeed())
			}
			Expect(first.cleanedNodes()).To(BeEmpty())

			second := newFakeConductor()
			serve(second)
			Eventually(func() int { return len(second.cleanedNodes()) }).Should(Equal(10))
		})

		It("loses no accepted cast when the connections drop, and fails pending calls retryably", func() {
			fake := newFakeConductor()
			open := fake.closeGate()
			serve(fake)
			DeferCleanup(open) // before stopping serve, which waits for held handlers

			// castAll sends n casts in parallel, as many API requests
			// would, and returns the ids of those accepted: all of them.
			castAll := func(prefix string, n int) []string {
				failures := make([]error, n)
				ids := make([]string, n)
				var wg sync.WaitGroup
				for i := range n {
					ids[i] = fmt.Sprintf("%s-%d", prefix, i)
					wg.Add(1)
					go func() {
						defer wg.Done()
						failures[i] = ContinueNodeClean.Call(ctx, cond, NodeArgs{NodeID: ids[i]})
					}()
				}
				wg.Wait()
				for _, err := range failures {
					Expect(err).NotTo(HaveOccurred())
				}
				return ids
			}

			accepted := castAll("before", 2*MaxInFlight)
			// MaxInFlight casts are now being handled (held by the gate),
			// the rest wait in the queue. A call to another conductor
			// waits for its reply.
			Eventually(func() int { return fake.methodCount(ContinueNodeClean.Name) }).Should(Equal(MaxInFlight))
			other := newFakeConductor()
			otherHost := uniqueHost()
			deleteQueueAfter(otherHost)
			stopOther, err := Serve(ctx, server, otherHost, other.mux(), testLogger())
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(stopOther)
			DeferCleanup(other.closeGate())
			callDone := make(chan error, 1)
			go func() {
				callDone <- SetBootDevice.Call(ctx, NewClient(client, 5*time.Minute).Conductor(otherHost), SetBootDeviceArgs{NodeID: "pending", Device: "pxe"})
			}()
			Eventually(func() int { return other.callCount(SetBootDevice.Name, "pending") }).Should(Equal(1))

			// More casts are sent while the connections drop: some before,
			// some during the outage, some after reconnecting.
			during := make(chan []string, 1)
			go func() {
				defer GinkgoRecover()
				during <- castAll("during", 2*MaxInFlight)
			}()
			dropConnections(server, client)

			var callErr error
			Eventually(callDone, "60s").Should(Receive(&callErr))
			e := errorOf(callErr)
			Expect(e.Kind).To(Equal(errs.KindTemporaryFailure))
			Expect(e.HTTPStatus()).To(Equal(503))

			var sentDuring []string
			Eventually(during, "60s").Should(Receive(&sentDuring))
			accepted = append(accepted, sentDuring...)
			accepted = append(accepted, castAll("after", 10)...)
			open()
			Eventually(func() int { return len(fake.cleanedNodes()) }, "60s").Should(Equal(len(accepted)))
			cleaned := fake.cleanedNodes()
			for _, id := range accepted {
				Expect(cleaned).To(HaveKey(id))
			}

			// The transports are usable again for calls too.
			_, err = GetBootDevice.Call(ctx, cond, NodeArgs{NodeID: "n1"})
			Expect(err).NotTo(HaveOccurred())
		})
	})
})
