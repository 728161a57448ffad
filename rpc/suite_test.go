package rpc

import (
	"os"
	"os/exec"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/ferricbm/ferric/rpc/rpctest"
)

func TestRPC(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "rpc")
}

var _ = BeforeSuite(func() {
	// Deliveries through the broker take far longer than usual on a
	// loaded machine; waiting longer costs passing specs nothing.
	SetDefaultEventuallyTimeout(30 * time.Second)
	Expect(ensureBroker(rpctest.AMQPURL())).To(Succeed())
})

// ensureBroker waits for a local RabbitMQ that is (re)starting, and starts
// it when it is not running at all (a fresh machine or a crashed broker); a
// remote broker given by URL must already run.
func ensureBroker(url string) error {
	conn, err := amqp.Dial(url)
	if err == nil {
		return conn.Close()
	}
	if url != rpctest.DefaultAMQPURL {
		return err
	}
	if _, lookErr := exec.LookPath("rabbitmqctl"); lookErr != nil {
		return err
	}
	if awaitBroker() != nil {
		start := exec.Command("rabbitmq-server", "-detached")
		start.Env = append(os.Environ(), "RABBITMQ_NODE_IP_ADDRESS=127.0.0.1")
		if out, err := start.CombinedOutput(); err != nil {
			GinkgoWriter.Printf("rabbitmq-server: %v: %s\n", err, out)
		}
		if err := awaitBroker(); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := amqp.Dial(url)
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func awaitBroker() error {
	out, err := exec.Command("rabbitmqctl", "await_startup", "--timeout", "60").CombinedOutput()
	if err != nil {
		GinkgoWriter.Printf("rabbitmqctl await_startup: %v: %s\n", err, out)
	}
	return err
}
