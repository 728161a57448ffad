package harness_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/harness"
)

var _ = Describe("ParseIronicError", func() {
	It("decodes the handler shape wrapped in error_message", func() {
		e, err := harness.ParseIronicError([]byte(`{"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"Node x could not be found.\", \"debuginfo\": null}"}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(e.Wrapped).To(BeTrue())
		Expect(e.FaultCode).To(Equal("Client"))
		Expect(e.Message()).To(Equal("Node x could not be found."))
	})

	It("decodes the routing shape", func() {
		e, err := harness.ParseIronicError([]byte(`{"error_message": "{\"code\": 406, \"title\": \"Not Acceptable\", \"description\": \"Version 1.999 ...\"}"}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(e.Code).To(Equal(406))
		Expect(e.Message()).To(Equal("Version 1.999 ..."))
	})

	It("decodes the flat shape of errors raised before the application", func() {
		e, err := harness.ParseIronicError([]byte(`{"faultcode": "Client", "faultstring": "Request entity too large"}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(e.Wrapped).To(BeFalse())
		Expect(e.Message()).To(Equal("Request entity too large"))
	})

	DescribeTable("rejects bodies that are not Ironic errors",
		func(body string) {
			_, err := harness.ParseIronicError([]byte(body))
			Expect(err).To(HaveOccurred())
		},
		Entry("not JSON", `oops`),
		Entry("error_message as an object", `{"error_message": {"faultcode": "Client", "faultstring": "x"}}`),
		Entry("extra keys beside error_message", `{"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"x\"}", "x": 1}`),
		Entry("echo's default body", `{"message": "Not Found"}`),
		Entry("inner document without a message", `{"error_message": "{\"faultcode\": \"Client\"}"}`),
	)
})

var _ = Describe("Config", func() {
	It("writes an INI file with DEFAULT first and durations in seconds", func() {
		path := filepath.Join(GinkgoT().TempDir(), "ferric.conf")
		c := harness.Config{}
		c.Set("rpc", "transport", "amqp").Set("DEFAULT", "host", "h1").
			Set("conductor", "heartbeat_timeout", 5*time.Second).
			Set("conductor", "enabled_hardware_types", []string{"fake-hardware", "ipmi"})
		Expect(c.Write(path)).To(Succeed())
		b, err := os.ReadFile(path)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(b)).To(Equal("[DEFAULT]\nhost = h1\n\n[conductor]\nenabled_hardware_types = fake-hardware,ipmi\nheartbeat_timeout = 5\n\n[rpc]\ntransport = amqp\n\n"))
	})
})

var _ = Describe("Process", func() {
	It("stops the whole process group it started, and only that", func() {
		dir := GinkgoT().TempDir()
		// The shell starts a grandchild; stopping the process must stop it too.
		p, err := harness.Start("sleeper", "/bin/sh", []string{"-c", "sleep 300 & echo $! > " + dir + "/child; wait"}, filepath.Join(dir, "log"))
		Expect(err).NotTo(HaveOccurred())
		var child int
		Eventually(func() error {
			b, err := os.ReadFile(filepath.Join(dir, "child"))
			if err == nil {
				_, err = fmt.Sscan(string(b), &child)
			}
			return err
		}).Should(Succeed())
		Expect(running(child)).To(BeTrue(), "grandchild runs")

		Expect(p.Kill()).To(Succeed())
		Expect(p.Exited()).To(BeTrue())
		Eventually(running).WithArguments(child).Should(BeFalse(), "grandchild was stopped with the group")
	})
})

// running reports whether pid is a live process: orphans that were killed
// may linger as zombies here (nothing reaps them), which count as stopped.
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}
