package conductor_test

import (
	"context"
	"errors"
	"maps"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor"
	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/driver/fake"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
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

// portTaken is a deploy interface whose in-process service cannot start,
// as a boot file server whose port another process holds.
type portTaken struct{ driver.DeployInterface }

func (portTaken) StartService(context.Context) error {
	return errors.New("listen tcp 127.0.0.1:8080: bind: address already in use")
}

func (portTaken) StopService(context.Context) error { return nil }

var _ = Describe("A starting conductor", func() {
	onEveryBackend(func(e *env) {
		It("answers an RPC sent the moment it registers, once it has started", func(ctx SpecContext) {
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

		It("is not left registered when a driver service cannot start", func(ctx SpecContext) {
			host := "s-" + e.group
			hw := fake.New()
			ht := hw.HardwareType()
			ht.Interfaces = maps.Clone(ht.Interfaces)
			ht.Interfaces[hwcatalog.Deploy] = []driver.Implementation{{Name: "fake",
				Impl: portTaken{ht.Interfaces[hwcatalog.Deploy][0].Impl.(driver.DeployInterface)}}}
			reg, err := driver.NewRegistry([]string{fake.Name}, ht)
			Expect(err).NotTo(HaveOccurred())
			c, err := conductor.New(conductor.Options{Config: e.config(host), Store: e.store, Transport: e.transport, Log: e.log, Drivers: reg})
			Expect(err).NotTo(HaveOccurred())

			Expect(c.Start(ctx)).To(MatchError(ContainSubstring("address already in use")))
			row, err := e.store.GetConductor(ctx, host)
			if err == nil {
				Expect(row.Online).To(BeFalse(), "the API must not route to a conductor that failed to start")
			}
			_, err = rpc.GetBootDevice.Call(ctx, e.client.Conductor(host), rpc.NodeArgs{NodeID: e.createNode(ctx, states.Available).UUID})
			Expect(err).To(HaveOccurred(), "nothing answers on its topic")
		})
	})
})
