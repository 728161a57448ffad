package main

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
)

var _ = Describe("ferric-lab", func() {
	It("exits 0 after a clean stop when Ctrl-C interrupts it", func(ctx SpecContext) {
		bin := filepath.Join(GinkgoT().TempDir(), "ferric-lab")
		out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))

		output := gbytes.NewBuffer()
		cmd := exec.Command(bin, "-nodes", "1", "-disk-mib", "8")
		cmd.Stdout, cmd.Stderr = output, output
		// A process group of its own, as a shell gives a foreground job:
		// Ctrl-C signals the whole group, not the test.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		Expect(cmd.Start()).To(Succeed())
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		DeferCleanup(func() {
			if cmd.ProcessState == nil {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				Eventually(exited).Should(Receive())
			}
		})
		Eventually(output, 4*time.Minute).Should(gbytes.Say("Ferric lab is running"))

		Expect(syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)).To(Succeed())
		var waitErr error
		Eventually(exited, time.Minute).Should(Receive(&waitErr))
		Expect(waitErr).NotTo(HaveOccurred(), string(output.Contents()))
		Expect(cmd.ProcessState.ExitCode()).To(Equal(0))
		Expect(output).To(gbytes.Say("stopping the lab"))
	}, NodeTimeout(6*time.Minute))
})
