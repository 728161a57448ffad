package db

import (
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

func fencedSaveSpecs(store func() *Store) {
	Describe("saving under the node lock", func() {
		var n *model.Node
		BeforeEach(func(ctx SpecContext) {
			n = newNode("fenced")
			Expect(store().CreateNode(ctx, n)).To(Succeed())
		})

		It("writes while the host holds the lock, keeps it, and refreshes the timestamps", func(ctx SpecContext) {
			s := store()
			locked, err := s.ReserveNode(ctx, n.UUID, "c1", 1)
			Expect(err).NotTo(HaveOccurred())
			from := *locked.ProvisionState
			locked.ProvisionState = ptr("manageable")
			locked.Extra = model.JSONObject{"k": "v"}
			Expect(s.SaveLockedNode(ctx, locked, "c1", 1, from)).To(Succeed())
			Expect(locked.UpdatedAt).NotTo(BeNil())
			Expect(locked.ProvisionUpdatedAt).NotTo(BeNil())

			got, err := s.GetNode(ctx, n.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.ProvisionState).To(Equal(ptr("manageable")))
			Expect(got.Extra).To(Equal(model.JSONObject{"k": "v"}))
			Expect(got.Reservation).To(Equal(ptr("c1")))
			Expect(got.UpdatedAt).To(Equal(locked.UpdatedAt))
			Expect(got.ProvisionUpdatedAt).To(Equal(locked.ProvisionUpdatedAt))
		})

		It("leaves provision_updated_at to heartbeats while the state stays", func(ctx SpecContext) {
			s := store()
			locked, err := s.ReserveNode(ctx, n.UUID, "c1", 1)
			Expect(err).NotTo(HaveOccurred())
			locked.ProvisionState = ptr("manageable")
			Expect(s.SaveLockedNode(ctx, locked, "c1", 1, "enroll")).To(Succeed())
			moved := *locked.ProvisionUpdatedAt

			Expect(s.TouchProvisioning(ctx, n.UUID)).To(Succeed())
			touched, err := s.GetNode(ctx, n.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(*touched.ProvisionUpdatedAt).To(BeTemporally(">", moved))

			locked.Extra = model.JSONObject{"again": true}
			Expect(s.SaveLockedNode(ctx, locked, "c1", 1, "manageable")).To(Succeed())
			Expect(*locked.ProvisionUpdatedAt).To(Equal(moved), "the state did not move")
			got, err := s.GetNode(ctx, n.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.UpdatedAt).To(Equal(locked.UpdatedAt))
			Expect(got.ProvisionUpdatedAt).To(Equal(touched.ProvisionUpdatedAt), "the heartbeat's touch stays")
		})

		It("refuses a host that lost the lock and writes nothing", func(ctx SpecContext) {
			s := store()
			stale, err := s.ReserveNode(ctx, n.UUID, "dead", 1)
			Expect(err).NotTo(HaveOccurred())
			_, err = s.ReleaseReservationsOf(ctx, "dead")
			Expect(err).NotTo(HaveOccurred())
			survivor, err := s.ReserveNode(ctx, n.UUID, "alive", 1)
			Expect(err).NotTo(HaveOccurred())
			survivor.ProvisionState = ptr("active")
			Expect(s.SaveLockedNode(ctx, survivor, "alive", 1, "enroll")).To(Succeed())

			stale.ProvisionState = ptr("deploy failed")
			lockedBy := fmt.Sprintf("Node %s is locked by host alive, please retry after the current operation is completed.", n.UUID)
			expectErr(s.SaveLockedNode(ctx, stale, "dead", 1, "enroll"), errs.KindNodeLocked, lockedBy, http.StatusConflict)
			expectErr(s.SaveAndReleaseNode(ctx, stale, "dead", 1), errs.KindNodeLocked, lockedBy, http.StatusConflict)

			got, err := s.GetNode(ctx, n.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.ProvisionState).To(Equal(ptr("active")))
			Expect(got.Reservation).To(Equal(ptr("alive")))
		})

		It("refuses a worker of an earlier epoch of the same host, and its release", func(ctx SpecContext) {
			s := store()
			stale, err := s.ReserveNode(ctx, n.UUID, "c1", 1)
			Expect(err).NotTo(HaveOccurred())
			// c1 restarts: its new incarnation clears its locks and takes the
			// node again, under the same hostname.
			_, err = s.ReleaseReservationsOf(ctx, "c1")
			Expect(err).NotTo(HaveOccurred())
			current, err := s.ReserveNode(ctx, n.UUID, "c1", 2)
			Expect(err).NotTo(HaveOccurred())
			Expect(current.ReservationEpoch).To(Equal(ptr(int64(2))))

			stale.ProvisionState = ptr("deploy failed")
			Expect(errs.Is(s.SaveLockedNode(ctx, stale, "c1", 1, "enroll"), errs.KindNodeLocked)).To(BeTrue())
			Expect(errs.Is(s.SaveAndReleaseNode(ctx, stale, "c1", 1), errs.KindNodeLocked)).To(BeTrue())
			Expect(errs.Is(s.ReleaseNode(ctx, n.UUID, "c1", 1), errs.KindNodeLocked)).To(BeTrue())

			current.ProvisionState = ptr("manageable")
			Expect(s.SaveLockedNode(ctx, current, "c1", 2, "enroll")).To(Succeed())
			got, err := s.GetNode(ctx, n.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.ProvisionState).To(Equal(ptr("manageable")))
			Expect(got.Reservation).To(Equal(ptr("c1")))
			Expect(s.ReleaseNode(ctx, n.UUID, "c1", 2)).To(Succeed())
		})

		It("refuses an unlocked node", func(ctx SpecContext) {
			n.ProvisionState = ptr("manageable")
			Expect(errs.Is(store().SaveLockedNode(ctx, n, "c1", 1, "enroll"), errs.KindNodeLocked)).To(BeTrue())
		})

		It("reports a deleted node as NodeNotFound", func(ctx SpecContext) {
			s := store()
			locked, err := s.ReserveNode(ctx, n.UUID, "c1", 1)
			Expect(err).NotTo(HaveOccurred())
			Expect(s.DestroyNode(ctx, n.UUID)).To(Succeed())
			Expect(errs.Is(s.SaveLockedNode(ctx, locked, "c1", 1, "enroll"), errs.KindNodeNotFound)).To(BeTrue())
		})

		It("saves and releases in one step", func(ctx SpecContext) {
			s := store()
			locked, err := s.ReserveNode(ctx, n.UUID, "c1", 1)
			Expect(err).NotTo(HaveOccurred())
			before, err := s.GetNode(ctx, n.UUID)
			Expect(err).NotTo(HaveOccurred())
			locked.ProvisionState = ptr("available")
			locked.PowerState = ptr("power off")
			Expect(s.SaveAndReleaseNode(ctx, locked, "c1", 1)).To(Succeed())

			got, err := s.GetNode(ctx, n.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.ProvisionState).To(Equal(ptr("available")))
			Expect(got.PowerState).To(Equal(ptr("power off")))
			Expect(got.Reservation).To(BeNil())
			Expect(got.UpdatedAt).NotTo(BeNil())
			Expect(got.ProvisionUpdatedAt).NotTo(Equal(before.ProvisionUpdatedAt), "a state change bumps provision_updated_at")

			_, err = s.ReserveNode(ctx, n.UUID, "c2", 1)
			Expect(err).NotTo(HaveOccurred())
		})
	})
}
