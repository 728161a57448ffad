package nodelock_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/nodelock"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

var seq atomic.Int64

func newNode(ctx SpecContext) *model.Node {
	n := &model.Node{UUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", seq.Add(1)), Driver: "fake-hardware"}
	Expect(store.CreateNode(ctx, n)).To(Succeed())
	return n
}

var _ = Describe("Locker", func() {
	It("locks a free node and returns it as stored, then releases it", func(ctx SpecContext) {
		n := newNode(ctx)
		l := nodelock.New(store, "me", 3, 10*time.Millisecond)
		got, err := l.Acquire(ctx, n.UUID)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.UUID).To(Equal(n.UUID))
		Expect(*got.Reservation).To(Equal("me"))
		Expect(l.Release(ctx, n.UUID, 0)).To(Succeed())
		stored, err := store.GetNode(ctx, n.UUID)
		Expect(err).NotTo(HaveOccurred())
		Expect(stored.Reservation).To(BeNil())
	})

	It("retries a locked node the configured number of times, then answers 409", func(ctx SpecContext) {
		n := newNode(ctx)
		_, err := store.ReserveNode(ctx, n.UUID, "other", 1)
		Expect(err).NotTo(HaveOccurred())
		l := nodelock.New(store, "me", 3, 40*time.Millisecond)
		started := time.Now()
		_, err = l.Acquire(ctx, n.UUID)
		Expect(errs.Status(err)).To(Equal(http.StatusConflict))
		Expect(err.Error()).To(ContainSubstring("locked by host other"))
		Expect(time.Since(started)).To(BeNumerically(">=", 80*time.Millisecond))
	})

	It("reports each acquisition's wait, its conflicts and whether the holder kept the lock", func(ctx SpecContext) {
		type report struct {
			wait      time.Duration
			conflicts int
			locked    bool
			err       error
		}
		var got []report
		n := newNode(ctx)
		l := nodelock.New(store, "me", 3, 40*time.Millisecond)
		l.Observe(func(wait time.Duration, conflicts int, locked bool, err error) {
			got = append(got, report{wait, conflicts, locked, err})
		})
		_, err := store.ReserveNode(ctx, n.UUID, "other", 1)
		Expect(err).NotTo(HaveOccurred())
		_, err = l.Acquire(ctx, n.UUID)
		Expect(errs.Status(err)).To(Equal(http.StatusConflict))
		Expect(store.ReleaseNode(ctx, n.UUID, "other", 1)).To(Succeed())
		_, err = l.Acquire(ctx, n.UUID)
		Expect(err).NotTo(HaveOccurred())

		Expect(got).To(HaveLen(2))
		Expect(got[0].conflicts).To(Equal(3))
		Expect(got[0].locked).To(BeTrue())
		Expect(got[0].wait).To(BeNumerically(">=", 80*time.Millisecond))
		Expect(got[1].conflicts).To(BeZero())
		Expect(got[1].locked).To(BeFalse())
		Expect(got[1].err).NotTo(HaveOccurred())
	})

	It("gets the node once the holder lets go within the retries", func(ctx SpecContext) {
		n := newNode(ctx)
		_, err := store.ReserveNode(ctx, n.UUID, "other", 1)
		Expect(err).NotTo(HaveOccurred())
		go func() {
			defer GinkgoRecover()
			time.Sleep(50 * time.Millisecond)
			Expect(store.ReleaseNode(ctx, n.UUID, "other", 1)).To(Succeed())
		}()
		l := nodelock.New(store, "me", 50, 20*time.Millisecond)
		got, err := l.Acquire(ctx, n.UUID)
		Expect(err).NotTo(HaveOccurred())
		Expect(*got.Reservation).To(Equal("me"))
	})

	It("does not retry a node that does not exist, and ignores releasing one", func(ctx SpecContext) {
		// A single retry would take an hour; one slow query never does.
		l := nodelock.New(store, "me", 100, time.Hour)
		started := time.Now()
		_, err := l.Acquire(ctx, "00000000-0000-4000-8000-ffffffffffff")
		Expect(errs.Status(err)).To(Equal(http.StatusNotFound))
		Expect(time.Since(started)).To(BeNumerically("<", time.Minute))
		Expect(l.Release(ctx, "00000000-0000-4000-8000-ffffffffffff", 0)).To(Succeed())
	})

	It("never releases another host's lock", func(ctx SpecContext) {
		n := newNode(ctx)
		_, err := store.ReserveNode(ctx, n.UUID, "other", 1)
		Expect(err).NotTo(HaveOccurred())
		Expect(nodelock.New(store, "me", 1, 0).Release(ctx, n.UUID, 0)).NotTo(Succeed())
		stored, err := store.GetNode(ctx, n.UUID)
		Expect(err).NotTo(HaveOccurred())
		Expect(*stored.Reservation).To(Equal("other"))
	})
})

var _ = Describe("Locker after a lapsed heartbeat", func() {
	It("takes no lock until the host has registered again", func(ctx SpecContext) {
		n := newNode(ctx)
		l := nodelock.New(store, "me", 3, 10*time.Millisecond)
		l.FenceAfter(time.Second)
		l.SetEpoch(1, time.Now().Add(-2*time.Second))
		Expect(l.Silent()).To(BeTrue())
		_, err := l.Acquire(ctx, n.UUID)
		Expect(errs.Status(err)).To(Equal(http.StatusServiceUnavailable))
		stored, err := store.GetNode(ctx, n.UUID)
		Expect(err).NotTo(HaveOccurred())
		Expect(stored.Reservation).To(BeNil(), "no lock was taken")

		l.SetEpoch(2, time.Now())
		got, err := l.Acquire(ctx, n.UUID)
		Expect(err).NotTo(HaveOccurred())
		Expect(*got.ReservationEpoch).To(Equal(int64(2)))
	})

	It("leaves a worker of the lapsed epoch unable to write to a node locked again", func(ctx SpecContext) {
		n := newNode(ctx)
		l := nodelock.New(store, "me", 3, 10*time.Millisecond)
		l.FenceAfter(time.Second)
		l.SetEpoch(1, time.Now())
		held, err := l.Acquire(ctx, n.UUID)
		Expect(err).NotTo(HaveOccurred())

		By("the host pausing past its heartbeat timeout while a survivor breaks the lock")
		l.Beat(time.Now().Add(-2 * time.Second))
		Expect(store.ReleaseNode(ctx, n.UUID, "me", 0)).To(Succeed())

		By("the host registering again and locking the node afresh")
		l.SetEpoch(2, time.Now())
		_, err = l.Acquire(ctx, n.UUID)
		Expect(err).NotTo(HaveOccurred())

		By("the worker that held the broken lock trying to save")
		state := "deploy failed"
		held.ProvisionState = &state
		err = store.SaveLockedNode(ctx, held, "me", *held.ReservationEpoch, "")
		Expect(errs.Is(err, errs.KindNodeLocked)).To(BeTrue(), "the stale write is fenced: %v", err)
		stored, err := store.GetNode(ctx, n.UUID)
		Expect(err).NotTo(HaveOccurred())
		Expect(stored.ProvisionState).To(BeNil(), "nothing was written")
	})
})

// lostAnswer applies the first reservation and then reports the broken
// connection a database restart causes, as if the answer was lost.
type lostAnswer struct {
	*db.Store
	lost atomic.Bool
}

func (s *lostAnswer) ReserveNode(ctx context.Context, uuid, host string, epoch int64) (*model.Node, error) {
	n, err := s.Store.ReserveNode(ctx, uuid, host, epoch)
	if err == nil && s.lost.CompareAndSwap(false, true) {
		return nil, errors.New("invalid connection")
	}
	return n, err
}

var _ = Describe("Locker after a reservation whose answer was lost", func() {
	It("releases the lock the reservation left, which nobody holds", func(ctx SpecContext) {
		n := newNode(ctx)
		l := nodelock.New(&lostAnswer{Store: store}, "me", 1, 0)
		_, err := l.Acquire(ctx, n.UUID)
		Expect(err).To(MatchError(ContainSubstring("invalid connection")))
		Eventually(func() (*string, error) {
			stored, err := store.GetNode(ctx, n.UUID)
			if err != nil {
				return nil, err
			}
			return stored.Reservation, nil
		}).Should(BeNil())
	})

	It("leaves alone a lock this host took on the node since", func(ctx SpecContext) {
		n := newNode(ctx)
		l := nodelock.New(&lostAnswer{Store: store}, "me", 1, 0)
		_, err := l.Acquire(ctx, n.UUID)
		Expect(err).To(HaveOccurred())
		// Another task of this host frees the leaked lock and takes the
		// node before the clean-up runs.
		Expect(store.ReleaseNode(ctx, n.UUID, "me", 0)).To(Succeed())
		_, err = l.Acquire(ctx, n.UUID)
		Expect(err).NotTo(HaveOccurred())
		Consistently(func() (*string, error) {
			stored, err := store.GetNode(ctx, n.UUID)
			if err != nil {
				return nil, err
			}
			return stored.Reservation, nil
		}, time.Second).Should(HaveValue(Equal("me")))
		Expect(l.Release(ctx, n.UUID, 0)).To(Succeed())
	})
})
