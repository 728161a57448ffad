package steps

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/harness"
	"github.com/ferricbm/ferric/tests/invariant"
)

// WatchInvariants starts the invariant checker on the database at
// connection (a deployment running with timings) for the rest of the
// spec. Record each accepted provision request with Accepted, and end with
// ExpectInvariantsKept.
func WatchInvariants(ctx context.Context, connection string, timings harness.Timings) *invariant.Checker {
	GinkgoHelper()
	checker, err := invariant.Start(ctx, connection, invariant.BoundsFor(timings))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(checker.Stop)
	return checker
}

// ExpectInvariantsKept waits for every accepted request to end, prints the
// line the chaos bench reads ("chaos <scenario>: <detail>, ..."), and
// expects no invariant broken while the checker watched.
func ExpectInvariantsKept(ctx context.Context, checker *invariant.Checker, scenario, detail string) {
	GinkgoHelper()
	violations, err := checker.Finish(ctx)
	Expect(err).NotTo(HaveOccurred())
	pollErrs, lastErr := checker.PollErrors()
	fmt.Fprintf(GinkgoWriter, "chaos %s: %s, %d polls failed (%v), %d violations\n", scenario, detail, pollErrs, lastErr, len(violations))
	var lines []string
	for _, v := range violations {
		lines = append(lines, v.String())
	}
	Expect(lines).To(BeEmpty(), "invariants broken during %s", scenario)
}
