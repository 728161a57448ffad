package harness

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"time"
)

// The broker is shared by everything on the machine, so the suites only
// stop its application (rabbitmqctl stop_app), never the node, and always
// start it again.

// StopBroker stops the RabbitMQ application on the local node.
func StopBroker(ctx context.Context) error {
	return rabbitmqctl(ctx, "stop_app")
}

// StartBroker starts the RabbitMQ application (a no-op when it runs) and
// waits until the AMQP port answers.
func StartBroker(ctx context.Context) error {
	if err := rabbitmqctl(ctx, "start_app"); err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:5672", time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("RabbitMQ not answering on 127.0.0.1:5672 after start_app: %w", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func rabbitmqctl(ctx context.Context, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "rabbitmqctl", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("rabbitmqctl %v: %w\n%s", args, err, out)
	}
	return nil
}
