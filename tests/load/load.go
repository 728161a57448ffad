// Package load drives a mix of API traffic against a running Ferric: each
// worker walks its share of nodes around the provisioning cycle (deploy,
// undeploy with cleaning, repair of failures) while it reads node lists,
// as a busy tenant and operator would. The chaos specs and the soak bench
// run it while faults are injected.
package load

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
)

// requestTimeout bounds each API call, so a stalled service slows the load
// down instead of hanging it.
const requestTimeout = 20 * time.Second

// Stats count what the load asked for and how it was answered.
type Stats struct {
	Accepted atomic.Int64 // provision requests answered 202
	Refused  atomic.Int64 // provision requests answered 4xx/5xx or not at all
	Reads    atomic.Int64 // GETs and lists answered 200
	Failed   atomic.Int64 // GETs and lists that failed
}

// Load is a running load.
type Load struct {
	Stats  Stats
	stop   context.CancelFunc
	wg     sync.WaitGroup
	accept func(node, target string)
}

// Start runs workers goroutines over nodes until Stop. accepted, when not
// nil, hears of every provision request the API accepted, before the load
// makes another request for that node.
func Start(client *gophercloud.ServiceClient, uuids []string, workers int, accepted func(node, target string)) *Load {
	ctx, stop := context.WithCancel(context.Background())
	l := &Load{stop: stop, accept: accepted}
	for w := range workers {
		var share []string
		for i := w; i < len(uuids); i += workers {
			share = append(share, uuids[i])
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.work(ctx, client, share)
		}()
	}
	return l
}

// Stop ends the load and waits for the requests in flight.
func (l *Load) Stop() {
	l.stop()
	l.wg.Wait()
}

func (l *Load) work(ctx context.Context, client *gophercloud.ServiceClient, share []string) {
	for i := 0; ctx.Err() == nil; i++ {
		if len(share) > 0 {
			l.step(ctx, client, share[i%len(share)])
		}
		l.list(ctx, client)
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (l *Load) list(ctx context.Context, client *gophercloud.ServiceClient) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	_, err := nodes.ListDetail(client, nodes.ListOpts{Limit: 50}).AllPages(rctx)
	l.count(ctx, err)
}

func (l *Load) count(ctx context.Context, err error) {
	switch {
	case err == nil:
		l.Stats.Reads.Add(1)
	case ctx.Err() == nil:
		l.Stats.Failed.Add(1)
	}
}

// step moves one node on from where it rests; a node that is busy is left
// alone.
func (l *Load) step(ctx context.Context, client *gophercloud.ServiceClient, uuid string) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	n, err := nodes.Get(rctx, client, uuid).Extract()
	l.count(ctx, err)
	if err != nil || n.TargetProvisionState != "" || n.Reservation != "" {
		return
	}
	if n.Maintenance {
		// A failed clean leaves the node in maintenance; the operator
		// repairs it and takes it out.
		err := nodes.UnsetMaintenance(rctx, client, uuid).ExtractErr()
		l.count(ctx, err)
		return
	}
	target, ok := next[nodes.ProvisionState(n.ProvisionState)]
	if !ok {
		return
	}
	err = nodes.ChangeProvisionState(rctx, client, uuid, nodes.ProvisionStateOpts{Target: target}).ExtractErr()
	switch {
	case err == nil:
		l.Stats.Accepted.Add(1)
		if l.accept != nil {
			l.accept(uuid, string(target))
		}
	case errors.Is(ctx.Err(), context.Canceled):
	default:
		l.Stats.Refused.Add(1)
	}
}

// next is the request that moves a resting node on around the cycle.
var next = map[nodes.ProvisionState]nodes.TargetProvisionState{
	nodes.Enroll:     nodes.TargetManage,
	nodes.Manageable: nodes.TargetProvide,
	nodes.Available:  nodes.TargetActive,
	nodes.Active:     nodes.TargetDeleted,
	nodes.DeployFail: nodes.TargetDeleted,
	nodes.Error:      nodes.TargetDeleted,
	nodes.CleanFail:  nodes.TargetManage,
}
