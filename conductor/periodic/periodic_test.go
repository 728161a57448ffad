package periodic_test

import (
	"context"
	"io"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/conductor/periodic"
)

var _ = Describe("Runner", func() {
	var log *logrus.Logger
	BeforeEach(func() {
		log = logrus.New()
		log.SetOutput(io.Discard)
	})

	It("runs enabled jobs repeatedly, survives a panicking run and skips disabled jobs", func() {
		var runs, panics, disabled atomic.Int32
		r := periodic.Start(context.Background(), log,
			periodic.Job{Name: "count", Interval: 20 * time.Millisecond, Run: func(context.Context) { runs.Add(1) }},
			periodic.Job{Name: "panic", Interval: 20 * time.Millisecond, Run: func(context.Context) { panics.Add(1); panic("boom") }},
			periodic.Job{Name: "off", Interval: 0, Run: func(context.Context) { disabled.Add(1) }},
		)
		Eventually(runs.Load).Should(BeNumerically(">=", 3))
		Eventually(panics.Load).Should(BeNumerically(">=", 2))
		r.Stop()
		after := runs.Load()
		Consistently(runs.Load, 100*time.Millisecond).Should(Equal(after))
		Expect(disabled.Load()).To(BeZero())
	})

	It("cancels a running job's context on Stop and waits for it", func() {
		returned := make(chan struct{})
		started := make(chan struct{})
		var once atomic.Bool
		r := periodic.Start(context.Background(), log, periodic.Job{Name: "long", Interval: 10 * time.Millisecond,
			Run: func(ctx context.Context) {
				if once.CompareAndSwap(false, true) {
					close(started)
					<-ctx.Done()
					close(returned)
				}
			}})
		Eventually(started).Should(BeClosed())
		r.Stop()
		Expect(returned).To(BeClosed())
	})
})
