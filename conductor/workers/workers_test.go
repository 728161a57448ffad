package workers_test

import (
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/workers"
	"github.com/ferricbm/ferric/pkg/errs"
)

var _ = Describe("Pool", func() {
	It("runs up to its size at once and refuses the next job with 503", func() {
		p := workers.New(2)
		release := make(chan struct{})
		ran := make(chan int, 3)
		for i := range 2 {
			Expect(p.Spawn(func() { ran <- i; <-release })).To(Succeed())
		}
		Eventually(ran).Should(HaveLen(2))
		Expect(p.Free()).To(Equal(0))
		err := p.Spawn(func() { ran <- 99 })
		e, ok := errs.As(err)
		Expect(ok).To(BeTrue())
		Expect(e.Kind).To(Equal(errs.KindNoFreeConductorWorker))
		Expect(e.HTTPStatus()).To(Equal(http.StatusServiceUnavailable))
		Expect(p.Size()).To(Equal(2))
		Expect(p.Refused()).To(Equal(uint64(1)))

		close(release)
		Eventually(p.Free).Should(Equal(2))
		Expect(p.Spawn(func() { ran <- 3 })).To(Succeed())
		Eventually(ran).Should(HaveLen(3))
		Expect(ran).NotTo(Receive(Equal(99)))
	})

	It("waits for running jobs on Stop and refuses new ones after", func() {
		p := workers.New(1)
		release := make(chan struct{})
		finished := make(chan struct{})
		Expect(p.Spawn(func() { <-release; close(finished) })).To(Succeed())
		stopped := make(chan struct{})
		go func() { p.Stop(); close(stopped) }()
		Consistently(stopped, 100*time.Millisecond).ShouldNot(BeClosed())
		close(release)
		Eventually(stopped).Should(BeClosed())
		Expect(finished).To(BeClosed())
		Expect(errs.Is(p.Spawn(func() {}), errs.KindNoFreeConductorWorker)).To(BeTrue())
	})

	It("has at least one worker", func() {
		p := workers.New(0)
		release := make(chan struct{})
		defer close(release)
		Expect(p.Spawn(func() { <-release })).To(Succeed())
		Expect(errs.Is(p.Spawn(func() {}), errs.KindNoFreeConductorWorker)).To(BeTrue())
	})
})
