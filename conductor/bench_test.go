package conductor_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/conductor"
	"github.com/ferricbm/ferric/conductor/driver/fake"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/db/dbtest"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

// BenchmarkEnrollToActive drives FERRIC_BENCH_NODES (default 1000)
// fake-hardware nodes from enroll to active — manage, provide, deploy —
// through the RPC API of one conductor, on MySQL when it is reachable.
// Each phase is sent for every node before the next starts, like a
// bulk enrolment would. Run it with -benchtime=1x -run='^$'.
func BenchmarkEnrollToActive(b *testing.B) {
	count := 1000
	if v, err := strconv.Atoi(os.Getenv("FERRIC_BENCH_NODES")); err == nil && v > 0 {
		count = v
	}
	ctx := context.Background()
	backend := db.DialectMySQL
	if dbtest.MySQLDisabled() {
		backend = db.DialectSQLite
	}
	store, cleanup, err := openStore(ctx, backend, "bench", b.TempDir())
	if err != nil && backend == db.DialectMySQL {
		b.Logf("MySQL unreachable (%v); using SQLite", err)
		backend = db.DialectSQLite
		store, cleanup, err = openStore(ctx, backend, "bench", b.TempDir())
	}
	if err != nil {
		b.Fatal(err)
	}
	defer cleanup()

	cfg := config.Defaults()
	cfg.Default.Host = "bench-" + runID
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	transport := rpc.NewInProcess()
	c, err := conductor.New(conductor.Options{Config: cfg, Store: store, Transport: transport, Log: log})
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = c.Stop(ctx) }()
	api := rpc.NewClient(transport, time.Minute).Conductor(c.Host())

	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		uuids := make([]string, count)
		for i := range uuids {
			state := string(states.Enroll)
			n := &model.Node{UUID: newUUID(), Driver: fake.Name, ProvisionState: &state}
			if err := c.Drivers().ResolveInterfaces(n); err != nil {
				b.Fatal(err)
			}
			if err := store.CreateNode(ctx, n); err != nil {
				b.Fatal(err)
			}
			uuids[i] = n.UUID
		}
		b.StartTimer()
		phases := []struct {
			target states.State
			send   func(uuid string) error
		}{
			{states.Manageable, func(u string) error {
				return rpc.DoProvisioningAction.Call(ctx, api, rpc.ProvisioningActionArgs{NodeID: u, Action: string(states.EventManage)})
			}},
			{states.Available, func(u string) error {
				return rpc.DoProvisioningAction.Call(ctx, api, rpc.ProvisioningActionArgs{NodeID: u, Action: string(states.EventProvide)})
			}},
			{states.Active, func(u string) error { return rpc.DoNodeDeploy.Call(ctx, api, rpc.DeployArgs{NodeID: u}) }},
		}
		for _, p := range phases {
			if err := sendAll(uuids, p.send); err != nil {
				b.Fatal(err)
			}
			if err := waitAll(ctx, store, uuids, p.target); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		for _, u := range uuids {
			if err := store.DestroyNode(ctx, u); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(count)*float64(b.N)/b.Elapsed().Seconds(), "nodes/s")
}

// sendAll sends one request per node from a few concurrent clients, and
// retries what the conductor refuses for lack of workers, as a client
// seeing 503 would.
func sendAll(uuids []string, send func(string) error) error {
	const clients = 32
	work := make(chan string)
	errc := make(chan error, clients)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range work {
				for {
					err := send(u)
					if errs.Is(err, errs.KindNoFreeConductorWorker) {
						time.Sleep(time.Millisecond)
						continue
					}
					if err != nil {
						errc <- fmt.Errorf("node %s: %w", u, err)
						return
					}
					break
				}
			}
		}()
	}
	for _, u := range uuids {
		work <- u
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// waitAll polls until every node has reached target and been unlocked.
// The benchmark's database holds only its own nodes.
func waitAll(ctx context.Context, store *db.Store, uuids []string, target states.State) error {
	deadline := time.Now().Add(5 * time.Minute)
	reserved := false
	for time.Now().Before(deadline) {
		nodes, err := store.ListNodes(ctx, db.NodeFilter{ProvisionStates: []string{string(target)}, Reserved: &reserved}, db.Page{}, []string{"id"})
		if err != nil {
			return err
		}
		if len(nodes) == len(uuids) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("nodes did not all reach %s", target)
}
