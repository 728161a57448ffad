package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/ferricbm/ferric/tests/harness"
)

// chaosSettings choose the scenarios of the chaos section and how often
// each runs.
type chaosSettings struct {
	runs      int
	scenarios string
}

// chaosScenarios are the labels of the chaos suite's specs (tests/e2e/chaos).
var chaosScenarios = []string{"kill-clean", "amqp", "bmc-hang", "sigstop", "mariadb"}

// chaosRunTimeout bounds one run of one scenario, set-up included.
const chaosRunTimeout = 6 * time.Minute

var (
	violationLine = regexp.MustCompile(`invariant violated: [^\n]*`)
	summaryLine   = regexp.MustCompile(`chaos [a-z-]+: [^\n]*`)
)

// benchChaos builds the chaos suite and the binaries once and runs each scenario the asked
// number of times, counting the runs that passed and the invariant
// violations the checker reported.
func benchChaos(ctx context.Context, s settings) ([]row, error) {
	work, done, err := workDir(s, "ferric-bench-chaos-")
	if err != nil {
		return nil, err
	}
	defer done()
	root, err := harness.RepoRoot()
	if err != nil {
		return nil, err
	}
	pkg := filepath.Join(root, "tests", "e2e", "chaos")
	suite := filepath.Join(work, "chaos.test")
	fmt.Println("building the chaos suite ...")
	build := exec.CommandContext(ctx, "go", "test", "-c", "-o", suite, ".")
	build.Dir = pkg
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build chaos suite: %w\n%s", err, out)
	}
	fmt.Println("building the ferric binaries ...")
	bin, err := harness.Build(filepath.Join(work, "bin"))
	if err != nil {
		return nil, err
	}
	scenarios := chaosScenarios
	if s.chaos.scenarios != "" {
		scenarios = strings.Split(s.chaos.scenarios, ",")
	}
	// Rounds go over every scenario in turn, so that a bench cut short
	// has run each scenario about as often.
	passed := make([]int, len(scenarios))
	violations := make([]int, len(scenarios))
	for i := 1; i <= s.chaos.runs; i++ {
		for j, sc := range scenarios {
			ok, found, summary, err := chaosRun(ctx, suite, bin, pkg, sc)
			if err != nil {
				return nil, err
			}
			if ok {
				passed[j]++
			}
			violations[j] += len(found)
			fmt.Printf("%s run %d/%d: passed=%v %s\n", sc, i, s.chaos.runs, ok, summary)
			for _, v := range found {
				fmt.Println("  ", v)
			}
		}
	}
	var rows []row
	for j, sc := range scenarios {
		rows = append(rows, row{"chaos " + sc + ": runs passed, invariant violations",
			fmt.Sprintf("%d/%d, %d", passed[j], s.chaos.runs, violations[j]), fmt.Sprintf("%d/%d, 0", s.chaos.runs, s.chaos.runs),
			yesNo(passed[j] == s.chaos.runs && violations[j] == 0)})
	}
	return rows, nil
}

// chaosRun runs one scenario once; its output is read for the checker's
// summary line and violations.
func chaosRun(ctx context.Context, suite, bin, dir, scenario string) (passed bool, violations []string, summary string, err error) {
	rctx, cancel := context.WithTimeout(ctx, chaosRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(rctx, suite, "-test.count=1", "-test.timeout="+chaosRunTimeout.String(),
		"-ginkgo.label-filter="+scenario, "-ginkgo.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FERRIC_E2E_BIN="+bin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return false, nil, "", ctx.Err()
	}
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	seen := map[string]bool{}
	for sc.Scan() {
		line := sc.Text()
		if m := summaryLine.FindString(line); m != "" {
			summary = m
		}
		if m := violationLine.FindString(line); m != "" && !seen[m] {
			seen[m] = true
			violations = append(violations, m)
		}
	}
	if runErr != nil {
		// A failed run's output is kept for a look at what went wrong.
		log := filepath.Join(os.TempDir(), fmt.Sprintf("ferric-chaos-%s-%d.log", scenario, time.Now().UnixNano()))
		if werr := os.WriteFile(log, out.Bytes(), 0o644); werr == nil {
			summary += " (output in " + log + ")"
		}
	}
	return runErr == nil, violations, summary, nil
}
