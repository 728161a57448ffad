package rpc

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/ferricbm/ferric/pkg/tlsfiles"
	"github.com/ferricbm/ferric/pkg/tlsfiles/tlsfilestest"
	"github.com/ferricbm/ferric/rpc/rpctest"
)

// tlsProxy stands in for a broker's TLS listener, which the test broker
// does not have: it terminates TLS on a loopback port and relays each
// connection's bytes to the broker's plain port.
type tlsProxy struct {
	ln         net.Listener
	backend    string
	handshakes atomic.Int64

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func startTLSProxy(cfg *tls.Config, backend string) *tlsProxy {
	GinkgoHelper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	Expect(err).NotTo(HaveOccurred())
	p := &tlsProxy{ln: ln, backend: backend, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	DeferCleanup(p.close)
	return p
}

func (p *tlsProxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

func (p *tlsProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.relay(c.(*tls.Conn))
	}
}

func (p *tlsProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *tlsProxy) relay(c *tls.Conn) {
	defer p.wg.Done()
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if err := c.Handshake(); err != nil {
		return
	}
	_ = c.SetDeadline(time.Time{})
	p.handshakes.Add(1)
	b, err := net.DialTimeout("tcp", p.backend, 5*time.Second)
	if err != nil {
		return
	}
	defer b.Close()
	if !p.track(c, b) {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(b, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, b); done <- struct{}{} }()
	<-done
	_ = c.Close()
	_ = b.Close()
	<-done
}

// close stops accepting and cuts every relayed connection.
func (p *tlsProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}

var _ = Describe("AMQP transport over TLS", func() {
	var (
		proxy                         *tlsProxy
		tlsURL                        string
		caFile, clientCert, clientKey string
		otherCAFile                   string
	)

	BeforeEach(func() {
		pki, err := tlsfilestest.NewPKI(GinkgoT().TempDir(), "broker", "ferric")
		Expect(err).NotTo(HaveOccurred())
		caFile, clientCert, clientKey, otherCAFile = pki.CAFile, pki.ClientCert, pki.ClientKey, pki.OtherCAFile
		serverCert, serverKey := pki.ServerCert, pki.ServerKey

		// The proxy asks for a client certificate of the same CA, as a
		// broker with verify_peer and fail_if_no_peer_cert does.
		sc, err := tlsfiles.NewServerCert(serverCert, serverKey, testLogger())
		Expect(err).NotTo(HaveOccurred())
		cfg := sc.Config()
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs, err = tlsfiles.CAPool(caFile)
		Expect(err).NotTo(HaveOccurred())
		broker, err := amqp.ParseURI(rpctest.AMQPURL())
		Expect(err).NotTo(HaveOccurred())
		proxy = startTLSProxy(cfg, net.JoinHostPort(broker.Host, strconv.Itoa(broker.Port)))

		// The plain URL pointed at the proxy: WithTLS makes it TLS on the
		// same host and port, as [oslo_messaging_rabbit] ssl does.
		broker.Host, broker.Port = "127.0.0.1", proxy.port()
		tlsURL = broker.String()
	})

	open := func(caFile, certFile, keyFile string) (Transport, error) {
		cfg, err := tlsfiles.Client(caFile, certFile, keyFile)
		Expect(err).NotTo(HaveOccurred())
		return NewAMQP(tlsURL, testLogger(), WithTLS(cfg))
	}
	openGood := func() Transport {
		GinkgoHelper()
		t, err := open(caFile, clientCert, clientKey)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(t.Close)
		return t
	}

	It("carries a call through a TLS session that the broker's listener verified", func(ctx SpecContext) {
		Expect(tlsURL).To(HavePrefix("amqp://"))
		server, client := openGood(), openGood()
		Expect(proxy.handshakes.Load()).To(BeNumerically("==", 2))
		host := uniqueHost()
		deleteQueueAfter(host)
		stop, err := Serve(context.Background(), server, host, newFakeConductor().mux(), testLogger())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stop)
		dev, err := GetBootDevice.Call(ctx, NewClient(client, 30*time.Second).Conductor(host), NodeArgs{NodeID: "n1"})
		Expect(err).NotTo(HaveOccurred())
		Expect(dev.BootDevice).To(HaveValue(Equal("pxe")))
	})

	Context("every transport behaviour, over TLS", func() {
		transportSpecs(func() (Transport, Transport) { return openGood(), openGood() }, deleteQueueAfter)
	})

	It("refuses a broker whose certificate its CA did not sign, saying so", func() {
		_, err := open(otherCAFile, clientCert, clientKey)
		Expect(err).To(MatchError(ContainSubstring("certificate signed by unknown authority")))
		Expect(proxy.handshakes.Load()).To(BeZero())
	})

	It("is refused by a broker that requires a client certificate when it has none", func() {
		_, err := open(caFile, "", "")
		Expect(err).To(HaveOccurred())
		Expect(proxy.handshakes.Load()).To(BeZero())
	})
})
