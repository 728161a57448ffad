// Package tooltest installs the command-line tools test suites and the
// lab drive, from the Debian packages that hold them, on a machine that
// lacks them. It reports plain errors so that non-Ginkgo callers can use it.
package tooltest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Install makes sure every tool of tools is there, installing the packages
// of the missing ones. A key is a command looked up on PATH or, when
// absolute, a file (a firmware image, a boot loader module); its value is
// the Debian package holding it, and any others (space-separated) the
// suite needs with it. A failed install is tried again after an
// apt-get update, as a fresh machine has no package lists.
func Install(ctx context.Context, tools map[string]string) error {
	var missing []string
	for tool, pkgs := range tools {
		if present(tool) {
			continue
		}
		for _, pkg := range strings.Fields(pkgs) {
			if !slices.Contains(missing, pkg) {
				missing = append(missing, pkg)
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	if os.Geteuid() != 0 {
		return fmt.Errorf("tools missing and not root: apt-get install %s", strings.Join(missing, " "))
	}
	install := append([]string{"install", "-y", "-qq", "--no-install-recommends"}, missing...)
	err := aptGet(ctx, install...)
	if err == nil {
		return nil
	}
	if uerr := aptGet(ctx, "update", "-qq"); uerr != nil {
		return errors.Join(err, uerr)
	}
	return aptGet(ctx, install...)
}

func present(tool string) bool {
	if filepath.IsAbs(tool) {
		_, err := os.Stat(tool)
		return err == nil
	}
	_, err := exec.LookPath(tool)
	return err == nil
}

// aptGet waits for another apt-get holding the package lock rather than
// failing: suites of several modules may install at once.
func aptGet(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "apt-get", append([]string{"-o", "DPkg::Lock::Timeout=600"}, args...)...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
