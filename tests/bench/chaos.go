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
	"slices"
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

// chaosScenario is one spec of an end-to-end suite, chosen by its label.
// Each such spec runs the invariant checker (tests/invariant) beside its
// fault and prints what it finds.
type chaosScenario struct {
	name  string
	suite string // the package under tests/e2e
}

var chaosScenarios = []chaosScenario{
	{"kill-clean", "chaos"},
	{"amqp", "chaos"},
	{"bmc-hang", "chaos"},
	{"sigstop", "chaos"},
	{"mariadb", "chaos"},
	{"kill-deploy", "resilience"},
	{"broker-restart", "resilience"},
	{"lab-kill-clean", "clean"},
	{"lab-kill-deploy", "clean"},
}

func chaosScenarioNames() []string {
	var names []string
	for _, sc := range chaosScenarios {
		names = append(names, sc.name)
	}
	return names
}

// chooseScenarios returns the scenarios named in list, all for "".
func chooseScenarios(list string) ([]chaosScenario, error) {
	if list == "" {
		return chaosScenarios, nil
	}
	var chosen []chaosScenario
	for _, name := range strings.Split(list, ",") {
		i := slices.IndexFunc(chaosScenarios, func(sc chaosScenario) bool { return sc.name == name })
		if i < 0 {
			return nil, fmt.Errorf("unknown chaos scenario %q (have %s)", name, strings.Join(chaosScenarioNames(), ", "))
		}
		chosen = append(chosen, chaosScenarios[i])
	}
	return chosen, nil
}

// chaosRunTimeout bounds one run of one scenario, set-up included.
const chaosRunTimeout = 6 * time.Minute

var (
	violationLine = regexp.MustCompile(`invariant violated: [^\n]*`)
	ranLine       = regexp.MustCompile(`Ran ([0-9]+) of [0-9]+ Specs`)
)

// benchChaos builds the suites of the chosen scenarios and the binaries
// once and runs each scenario the asked number of times, counting the
// runs that passed and the invariant violations the checker reported.
func benchChaos(ctx context.Context, s settings) ([]row, error) {
	scenarios, err := chooseScenarios(s.chaos.scenarios)
	if err != nil {
		return nil, err
	}
	work, done, err := workDir(s, "ferric-bench-chaos-")
	if err != nil {
		return nil, err
	}
	defer done()
	root, err := harness.RepoRoot()
	if err != nil {
		return nil, err
	}
	tests := map[string]string{} // suite -> its compiled test binary
	for _, sc := range scenarios {
		if tests[sc.suite] != "" {
			continue
		}
		fmt.Printf("building the %s suite ...\n", sc.suite)
		bin := filepath.Join(work, sc.suite+".test")
		build := exec.CommandContext(ctx, "go", "test", "-c", "-o", bin, ".")
		build.Dir = filepath.Join(root, "tests", "e2e", sc.suite)
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build %s suite: %w\n%s", sc.suite, err, out)
		}
		tests[sc.suite] = bin
	}
	fmt.Println("building the ferric binaries ...")
	bin, err := harness.Build(filepath.Join(work, "bin"))
	if err != nil {
		return nil, err
	}
	// Rounds go over every scenario in turn, so that a bench cut short
	// has run each scenario about as often.
	passed := make([]int, len(scenarios))
	violations := make([]int, len(scenarios))
	for i := 1; i <= s.chaos.runs; i++ {
		for j, sc := range scenarios {
			ok, found, summary, err := chaosRun(ctx, tests[sc.suite], bin, filepath.Join(root, "tests", "e2e", sc.suite), sc.name)
			if err != nil {
				return nil, err
			}
			if ok {
				passed[j]++
			}
			violations[j] += len(found)
			fmt.Printf("%s run %d/%d: passed=%v %s\n", sc.name, i, s.chaos.runs, ok, summary)
			for _, v := range found {
				fmt.Println("  ", v)
			}
		}
	}
	var rows []row
	for j, sc := range scenarios {
		rows = append(rows, row{"chaos " + sc.name + " (" + sc.suite + " suite): runs passed, invariant violations",
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
		"-ginkgo.label-filter="+scenario, "-ginkgo.v", "-ginkgo.no-color")
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
	ran := false
	for sc.Scan() {
		line := sc.Text()
		if m := ranLine.FindStringSubmatch(line); m != nil {
			ran = m[1] != "0"
		}
		if at := strings.Index(line, "chaos "+scenario+": "); at >= 0 {
			summary = line[at:]
		}
		if m := violationLine.FindString(line); m != "" && !seen[m] {
			seen[m] = true
			violations = append(violations, m)
		}
	}
	switch {
	case runErr != nil:
	case !ran:
		// A label that matches no spec would pass without testing anything.
		runErr = fmt.Errorf("no spec is labelled %q", scenario)
		summary += " (no spec ran)"
	case summary == "":
		runErr = fmt.Errorf("%s printed no checker summary", scenario)
		summary = "(no checker summary)"
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
