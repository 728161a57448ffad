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

// Observer hears of the provision requests the load makes, before it makes
// another for the same node.
type Observer interface {
	// Accepted: the API answered 202.
	Accepted(node, target string)
	// Unanswered: the request got a server error or no answer, so it may
	// or may not have been acted on.
	Unanswered(node, target string)
}

// Load is a running load.
type Load struct {
	Stats Stats
	stop  context.CancelFunc
	wg    sync.WaitGroup
	obs   Observer
}

// Start runs workers goroutines over nodes until Stop, telling obs (when
// not nil) of its provision requests.
func Start(client *gophercloud.ServiceClient, uuids []string, workers int, obs Observer) *Load {
	ctx, stop := context.WithCancel(context.Background())
	l := &Load{stop: stop, obs: obs}
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

// Stop ends the load and waits for the requests in flight, which run to
// their answer: a request the API accepts must be heard of, even one that
// was made just before the stop.
func (l *Load) Stop() {
	l.stop()
	l.wg.Wait()
}

func (l *Load) work(ctx context.Context, client *gophercloud.ServiceClient, share []string) {
	for i := 0; ctx.Err() == nil; i++ {
		if len(share) > 0 {
			l.step(ctx, client, share[i%len(share)])
		}
		l.list(client)
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (l *Load) list(client *gophercloud.ServiceClient) {
	rctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	_, err := nodes.ListDetail(client, nodes.ListOpts{Limit: 50}).AllPages(rctx)
	l.count(err)
}

func (l *Load) count(err error) {
	if err == nil {
		l.Stats.Reads.Add(1)
	} else {
		l.Stats.Failed.Add(1)
	}
}

// step moves one node on from where it rests; a node that is busy is left
// alone.
func (l *Load) step(ctx context.Context, client *gophercloud.ServiceClient, uuid string) {
	rctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	n, err := nodes.Get(rctx, client, uuid).Extract()
	l.count(err)
	if err != nil || n.TargetProvisionState != "" || n.Reservation != "" || ctx.Err() != nil {
		return
	}
	if n.Maintenance {
		// A failed clean leaves the node in maintenance; the operator
		// repairs it and takes it out.
		err := nodes.UnsetMaintenance(rctx, client, uuid).ExtractErr()
		l.count(err)
		return
	}
	target, ok := next[nodes.ProvisionState(n.ProvisionState)]
	if !ok {
		return
	}
	err = nodes.ChangeProvisionState(rctx, client, uuid, nodes.ProvisionStateOpts{Target: target}).ExtractErr()
	if err != nil {
		l.Stats.Refused.Add(1)
		var code gophercloud.ErrUnexpectedResponseCode
		if l.obs != nil && !(errors.As(err, &code) && code.Actual < 500) {
			l.obs.Unanswered(uuid, string(target))
		}
		return
	}
	l.Stats.Accepted.Add(1)
	if l.obs != nil {
		l.obs.Accepted(uuid, string(target))
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
