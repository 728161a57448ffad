package conductor_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

// announcing sends an RPC to a conductor the moment it registers, as an API
// that has just found it alive would.
type announcing struct {
	conductor.Store
	call func()
}

func (s announcing) RegisterConductor(ctx context.Context, c *model.Conductor, ifaces []model.ConductorHardwareInterface) error {
	s.call()
	return s.Store.RegisterConductor(ctx, c, ifaces)
}

var _ = Describe("A starting conductor", func() {
	for _, backend := range backends {
		Context("on "+backend, func() {
			It("answers an RPC sent the moment it registers, once it has started", func(ctx SpecContext) {
				e := newEnv(backend)
				host := "s-" + e.group
				n := e.createNode(ctx, states.Available)
				answered := make(chan error, 1)
				send := func() {
					go func() {
						_, err := rpc.GetBootDevice.Call(ctx, e.client.Conductor(host), rpc.NodeArgs{NodeID: n.UUID})
						answered <- err
					}()
				}
				c := e.startWith(ctx, host, func(o *conductor.Options) { o.Store = announcing{Store: o.Store, call: send} })
				Expect(c.Host()).To(Equal(host))
				Eventually(answered).Should(Receive(BeNil()), "not refused for want of a listener on the topic")
			})
		})
	}
})
