package logging_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/logging"
)

var _ = Describe("Throttle", func() {
	It("lets one line a key through per interval and says how many it held back", func() {
		t := logging.NewThrottle(time.Minute)
		start := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
		ok, _ := t.Allow("TemporaryFailure", start)
		Expect(ok).To(BeTrue())
		for i := range 5 {
			ok, _ = t.Allow("TemporaryFailure", start.Add(time.Duration(i+1)*time.Second))
			Expect(ok).To(BeFalse())
		}
		ok, _ = t.Allow("NoFreeConductorWorker", start.Add(time.Second))
		Expect(ok).To(BeTrue(), "keys are throttled apart")
		ok, suppressed := t.Allow("TemporaryFailure", start.Add(time.Minute))
		Expect(ok).To(BeTrue())
		Expect(suppressed).To(Equal(5))
		ok, suppressed = t.Allow("TemporaryFailure", start.Add(2*time.Minute))
		Expect(ok).To(BeTrue())
		Expect(suppressed).To(BeZero())
	})
})
