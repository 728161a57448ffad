package nodelock_test

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/nodelock"
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
