package rpc

import (
	"context"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/ferricbm/ferric/rpc/rpctest"
)

// BenchmarkCallRoundTrip measures one call (encode, send, dispatch, reply,
// decode) on each transport, with calls in parallel as the API makes them.
func BenchmarkCallRoundTrip(b *testing.B) {
	b.Run("inprocess", func(b *testing.B) {
		t := NewInProcess()
		defer t.Close()
		benchmarkCalls(b, t, t)
	})
	b.Run("amqp", func(b *testing.B) {
		server, err := NewAMQP(rpctest.AMQPURL(), nil)
		if err != nil {
			b.Fatalf("connect: %v", err)
		}
		defer server.Close()
		client, err := NewAMQP(rpctest.AMQPURL(), nil)
		if err != nil {
			b.Fatalf("connect: %v", err)
		}
		defer client.Close()
		benchmarkCalls(b, server, client)
	})
}

func benchmarkCalls(b *testing.B, server, client Transport) {
	host := uniqueHost()
	stop, err := Serve(context.Background(), server, host, newFakeConductor().mux(), nil)
	if err != nil {
		b.Fatalf("serve: %v", err)
	}
	defer deleteBenchQueue(b, server, host)
	defer stop()
	cond := NewClient(client, 10*time.Second).Conductor(host)
	ctx := context.Background()
	// The API serves many requests at once; measure under that load.
	b.SetParallelism(8)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := GetBootDevice.Call(ctx, cond, NodeArgs{NodeID: "n1"}); err != nil {
				b.Errorf("call: %v", err)
				return
			}
		}
	})
}

func deleteBenchQueue(b *testing.B, t Transport, host string) {
	if _, ok := t.(*amqpTransport); !ok {
		return
	}
	conn, err := amqp.Dial(rpctest.AMQPURL())
	if err != nil {
		b.Fatalf("connect: %v", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		b.Fatalf("channel: %v", err)
	}
	if _, err := ch.QueueDelete(topicFor(host), false, false, false); err != nil {
		b.Fatalf("delete queue: %v", err)
	}
}
