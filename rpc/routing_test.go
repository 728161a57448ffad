package rpc

import (
	"context"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

// ringOf routes a node to the host named for its conductor group, as the
// hash ring would for a group one conductor serves.
type ringOf map[string]string

func (r ringOf) Lookup(_ context.Context, group, hwType, _ string) (string, error) {
	if host, ok := r[group]; ok {
		return host, nil
	}
	return "", errs.New(errs.KindNoValidHost, "No conductor for %s in group %q.", hwType, group).WithStatus(http.StatusNotFound)
}

var _ = Describe("routing by node", func() {
	var (
		client       *Client
		east, west   *fakeConductor
		eastH, westH string
	)

	BeforeEach(func() {
		t := NewInProcess()
		DeferCleanup(t.Close)
		east, west = newFakeConductor(), newFakeConductor()
		eastH, westH = uniqueHost(), uniqueHost()
		for host, f := range map[string]*fakeConductor{eastH: east, westH: west} {
			stop, err := Serve(context.Background(), t, host, f.mux(), testLogger())
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(stop)
		}
		client = NewClient(t, 10*time.Second).WithRouter(ringOf{"east": eastH, "west": westH})
	})

	It("sends a node's methods to the conductor owning it, as the node is when the method is sent", func() {
		ctx := context.Background()
		n := &model.Node{UUID: "n1", Driver: "ipmi", ConductorGroup: "east"}
		Expect(SetBootDevice.Call(ctx, client.ForNode(n), SetBootDeviceArgs{NodeID: "n1", Device: "pxe"})).To(Succeed())
		Expect(east.callCount(SetBootDevice.Name, "n1")).To(Equal(1))
		Expect(west.callCount(SetBootDevice.Name, "n1")).To(BeZero())

		moved := client.ForNode(&model.Node{UUID: "n1", Driver: "ipmi", ConductorGroup: "west"})
		_, err := GetBootDevice.Call(ctx, moved, NodeArgs{NodeID: "n1"})
		Expect(err).NotTo(HaveOccurred())
		Expect(west.callCount(GetBootDevice.Name, "n1")).To(Equal(1))

		pinned, err := client.ForNode(n).Resolve(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(ContinueNodeDeploy.Call(ctx, pinned, NodeArgs{NodeID: "n1"})).To(Succeed())
		Eventually(func() int { return east.deployedCount("n1") }).Should(Equal(1))
	})

	It("answers a node no conductor serves with the router's error, sending nothing", func() {
		orphan := client.ForNode(&model.Node{UUID: "n2", Driver: "ipmi", ConductorGroup: "north"})
		_, err := GetBootDevice.Call(context.Background(), orphan, NodeArgs{NodeID: "n2"})
		e := errorOf(err)
		Expect(e.Kind).To(Equal(errs.KindNoValidHost))
		Expect(e.HTTPStatus()).To(Equal(http.StatusNotFound))
		_, err = orphan.Resolve(context.Background())
		Expect(errs.Is(err, errs.KindNoValidHost)).To(BeTrue())
		Expect(east.methodCount(GetBootDevice.Name) + west.methodCount(GetBootDevice.Name)).To(BeZero())
	})
})
