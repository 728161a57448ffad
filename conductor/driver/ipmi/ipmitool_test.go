package ipmi_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/conductor/driver/drivertest"
	"github.com/ferricbm/ferric/conductor/driver/ipmi"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
)

// The lab's ipmi_sim BMCs (tests/lab/bmc) cannot be made to fail in
// every way a real BMC does; these specs put a scripted stand-in for
// ipmitool in its place. It records each call's arguments and the content
// and mode of the password file it was given, then behaves as told.
const fakeIpmitool = `#!/bin/sh
dir=%DIR%
echo "$*" >> "$dir/calls"
date +%s%N >> "$dir/times"
pw=""; prev=""
for a in "$@"; do [ "$prev" = "-f" ] && pw="$a"; prev="$a"; done
echo "$pw" >> "$dir/pwfiles"
cat "$pw" > "$dir/pw.seen"
stat -c %a "$pw" > "$dir/pw.mode"
n=$(wc -l < "$dir/calls")
%BEHAVIOUR%
`

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type scripted struct {
	dir  string
	hw   *ipmi.Hardware
	logs *lockedBuffer
	node *model.Node
}

func newScripted(behaviour string, tune func(*config.IPMI)) *scripted {
	dir := GinkgoT().TempDir()
	script := strings.NewReplacer("%DIR%", dir, "%BEHAVIOUR%", behaviour).Replace(fakeIpmitool)
	path := filepath.Join(dir, "ipmitool")
	Expect(os.WriteFile(path, []byte(script), 0o755)).To(Succeed())
	c := config.Defaults().IPMI
	c.MinCommandInterval = 0
	c.CommandRetryTimeout = 10 * time.Second
	c.PowerStatePollInterval = 10 * time.Millisecond
	if tune != nil {
		tune(&c)
	}
	logs := &lockedBuffer{}
	log := logrus.New()
	log.SetOutput(logs)
	return &scripted{
		dir: dir,
		hw: ipmi.New(ipmi.Options{IPMI: c, Ipmitool: path, Log: log,
			PowerStateChangeTimeout: 5 * time.Second, SoftPowerOffTimeout: 5 * time.Second}),
		logs: logs,
		node: &model.Node{UUID: "n1", Driver: ipmi.Name, DriverInfo: model.JSONObject{
			"ipmi_address": "192.0.2.7", "ipmi_username": "admin", "ipmi_password": "s3cret-Pw",
		}},
	}
}

// running reports whether pid is a live process; the zombies that linger
// on these machines count as gone.
func running(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

func (s *scripted) read(name string) string {
	data, _ := os.ReadFile(filepath.Join(s.dir, name))
	return string(data)
}

func (s *scripted) calls() []string {
	return strings.Split(strings.TrimSpace(s.read("calls")), "\n")
}

var _ = Describe("ipmitool invocation", func() {
	It("passes the BMC's coordinates and the password only through a private file", func(ctx SpecContext) {
		s := newScripted(`echo "Chassis Power is on"`, nil)
		Expect(s.hw.Power().GetPowerState(ctx, drivertest.New(s.node))).To(Equal(states.PowerOn))
		call := s.calls()[0]
		Expect(call).To(MatchRegexp(`^-v -I lanplus -H 192\.0\.2\.7 -p 623 -L ADMINISTRATOR -C 3 -U admin -N 5 -R 1 -f \S+ power status$`))
		Expect(call).NotTo(ContainSubstring("s3cret"))
		Expect(s.read("pw.seen")).To(Equal("s3cret-Pw"))
		Expect(s.read("pw.mode")).To(Equal("600\n"))
		Expect(strings.TrimSpace(s.read("pwfiles"))).NotTo(BeAnExistingFile())

		s.node.DriverInfo = model.JSONObject{"ipmi_address": "192.0.2.7", "ipmi_port": "6230",
			"ipmi_cipher_suite": 17, "ipmi_priv_level": "OPERATOR"}
		Expect(s.hw.Power().GetPowerState(ctx, drivertest.New(s.node))).To(Equal(states.PowerOn))
		call = s.calls()[1]
		Expect(call).To(MatchRegexp(`^-v -I lanplus -H 192\.0\.2\.7 -p 6230 -L OPERATOR -C 17 -N 5 -R 1 -f \S+ power status$`))
		// ipmitool would prompt for an empty password: it gets a NUL.
		Expect(s.read("pw.seen")).To(Equal("\x00"))
	})

	It("lets ipmitool resend for the whole budget when use_ipmitool_retries is set", func(ctx SpecContext) {
		s := newScripted(`echo "Chassis Power is off"`, func(c *config.IPMI) {
			c.UseIpmitoolRetries = true
			c.CommandRetryTimeout = 60 * time.Second
			c.ConnectTimeout = 2 * time.Second
		})
		Expect(s.hw.Power().GetPowerState(ctx, drivertest.New(s.node))).To(Equal(states.PowerOff))
		Expect(s.calls()[0]).To(ContainSubstring(" -N 2 -R 30 "))
	})

	It("retries transient failures and gives up at once on others", func(ctx SpecContext) {
		s := newScripted(`if [ "$n" -le 2 ]; then echo "Error: insufficient resources for session" >&2; exit 1; fi
echo "Chassis Power is on"`, nil)
		Expect(s.hw.Power().GetPowerState(ctx, drivertest.New(s.node))).To(Equal(states.PowerOn))
		Expect(s.calls()).To(HaveLen(3))
		Expect(s.logs.String()).To(ContainSubstring("retrying"))

		s = newScripted(`echo "Error: Unable to establish IPMI v2 / RMCP+ session" >&2; exit 1`, nil)
		_, err := s.hw.Power().GetPowerState(ctx, drivertest.New(s.node))
		Expect(errs.Is(err, ipmi.KindIPMIFailure)).To(BeTrue())
		Expect(err.Error()).To(Equal("IPMI call failed: power status. ipmitool exited with status 1. ipmitool: Error: Unable to establish IPMI v2 / RMCP+ session"))
		Expect(s.calls()).To(HaveLen(1))

		s = newScripted(`if [ "$n" -le 1 ]; then echo "BMC says: warming up" >&2; exit 1; fi
echo "Chassis Power is on"`, func(c *config.IPMI) { c.AdditionalRetryableIPMIErrors = []string{"warming up"} })
		Expect(s.hw.Power().GetPowerState(ctx, drivertest.New(s.node))).To(Equal(states.PowerOn))
		Expect(s.calls()).To(HaveLen(2))
	})

	It("stops retrying when command_retry_timeout runs out", func(ctx SpecContext) {
		s := newScripted(`echo "Error: Node busy" >&2; exit 1`, func(c *config.IPMI) {
			c.CommandRetryTimeout = 300 * time.Millisecond
			c.MinCommandInterval = 50 * time.Millisecond
		})
		started := time.Now()
		_, err := s.hw.Power().GetPowerState(ctx, drivertest.New(s.node))
		Expect(errs.Is(err, ipmi.KindIPMIFailure)).To(BeTrue())
		// It kept retrying the busy BMC until the timeout; how many tries
		// fit in it depends on the machine's speed.
		Expect(time.Since(started)).To(BeNumerically(">=", 300*time.Millisecond))
		Expect(s.read("calls")).To(ContainSubstring("power status"))
	})

	It("leaves min_command_interval between two commands to the same BMC", func(ctx SpecContext) {
		s := newScripted(`echo "Chassis Power is on"`, func(c *config.IPMI) { c.MinCommandInterval = 200 * time.Millisecond })
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() { _, _ = s.hw.Power().GetPowerState(ctx, drivertest.New(s.node)) })
		}
		wg.Wait()
		var times []int64
		for _, line := range strings.Fields(s.read("times")) {
			n, err := strconv.ParseInt(line, 10, 64)
			Expect(err).NotTo(HaveOccurred())
			times = append(times, n)
		}
		Expect(times).To(HaveLen(3))
		for i := 1; i < len(times); i++ {
			Expect(time.Duration(times[i] - times[i-1])).To(BeNumerically(">=", 200*time.Millisecond))
		}
	})

	It("kills a hung ipmitool with everything it started", func(ctx SpecContext) {
		s := newScripted(`sleep 60 & echo $! > "$dir/child"; wait`, func(c *config.IPMI) { c.CommandRetryTimeout = 500 * time.Millisecond })
		_, err := s.hw.Power().GetPowerState(ctx, drivertest.New(s.node))
		Expect(errs.Is(err, ipmi.KindIPMIFailure)).To(BeTrue())
		Expect(err.Error()).To(ContainSubstring("No answer from the BMC at 192.0.2.7:623 in time; ipmitool was stopped"))
		child, convErr := strconv.Atoi(strings.TrimSpace(s.read("child")))
		Expect(convErr).NotTo(HaveOccurred())
		Eventually(func() bool { return running(child) }).Should(BeFalse())
		Expect(strings.TrimSpace(s.read("pwfiles"))).NotTo(BeAnExistingFile())
	})

	It("treats a refusal reported on stderr as a failure even when ipmitool exits 0", func(ctx SpecContext) {
		s := newScripted(`echo "Set Chassis Boot Parameter 5 failed: Invalid data field in request" >&2`,
			func(c *config.IPMI) { c.DisableBootTimeout = false })
		err := s.hw.Management().SetBootDevice(ctx, drivertest.New(s.node), "safe", true)
		Expect(errs.Is(err, ipmi.KindIPMIFailure)).To(BeTrue())
		Expect(err.Error()).To(ContainSubstring("chassis bootdev safe options=persistent"))
		Expect(s.calls()).To(HaveLen(1))
	})

	It("asks the BMC to keep the boot device first, and only warns when it refuses", func(ctx SpecContext) {
		s := newScripted(`case "$*" in *raw*) echo "Unable to send RAW command" >&2; exit 1;; esac`, nil)
		Expect(s.hw.Management().SetBootDevice(ctx, drivertest.New(s.node), "pxe", false)).To(Succeed())
		calls := s.calls()
		Expect(calls).To(HaveLen(2))
		Expect(calls[0]).To(HaveSuffix(" raw 0x00 0x08 0x03 0x08"))
		Expect(calls[1]).To(HaveSuffix(" chassis bootdev pxe"))
		Expect(s.logs.String()).To(ContainSubstring("could not disable the boot device timeout"))

		s.node.DriverInfo["ipmi_disable_boot_timeout"] = false
		s.node.DriverInternalInfo = model.JSONObject{"deploy_boot_mode": "uefi"}
		Expect(s.hw.Management().SetBootDevice(ctx, drivertest.New(s.node), "disk", true)).To(Succeed())
		calls = s.calls()
		Expect(calls).To(HaveLen(3))
		Expect(calls[2]).To(HaveSuffix(" chassis bootdev disk options=persistent,efiboot"))
	})

	It("reads the persistent flag and device from the boot parameters", func(ctx SpecContext) {
		s := newScripted(`printf ' Boot Flags :\n   - Boot Flag Valid\n   - Options apply to all future boots\n   - Boot Device Selector : Force Boot from default Hard-Drive, request Safe-Mode\n'`, nil)
		bd, err := s.hw.Management().GetBootDevice(ctx, drivertest.New(s.node))
		Expect(err).NotTo(HaveOccurred())
		Expect(*bd.Device).To(Equal("safe"))
		Expect(*bd.Persistent).To(BeTrue())
	})

	It("polls until a slow BMC reports the new state, and fails at the timeout", func(ctx SpecContext) {
		// "power on" takes effect only at the third status read after it.
		s := newScripted(`case "$*" in
*"power on") echo 0 > "$dir/reads"; echo "Chassis Power Control: Up/On";;
*"power status") if [ -f "$dir/reads" ]; then r=$(($(cat "$dir/reads")+1)); echo $r > "$dir/reads"; fi
  if [ -f "$dir/reads" ] && [ "$(cat "$dir/reads")" -ge 3 ]; then echo "Chassis Power is on"; else echo "Chassis Power is off"; fi;;
esac`, nil)
		p := s.hw.Power()
		Expect(p.SetPowerState(ctx, drivertest.New(s.node), states.PowerOn, 0)).To(Succeed())
		Expect(strings.TrimSpace(s.read("reads"))).To(Equal("3"))

		s = newScripted(`case "$*" in *"power status") echo "Chassis Power is on";; esac`, nil)
		started := time.Now()
		err := s.hw.Power().SetPowerState(ctx, drivertest.New(s.node), states.PowerOff, 200*time.Millisecond)
		Expect(errs.Is(err, errs.KindPowerStateFailure)).To(BeTrue())
		Expect(errs.Message(err)).To(Equal("Failed to set node power state to power off. It was still power on after 200ms."))
		// How many reads fit in 200 ms depends on the machine's speed;
		// that it kept reading until the deadline does not.
		Expect(time.Since(started)).To(BeNumerically(">=", 200*time.Millisecond))
		calls := s.calls()
		Expect(len(calls)).To(BeNumerically(">=", 2))
		Expect(calls[0]).To(HaveSuffix(" power off"))
		Expect(calls[len(calls)-1]).To(HaveSuffix(" power status"))
	})

	It("gives up waiting when the caller's context ends", func() {
		s := newScripted(`case "$*" in *"power status") echo "Chassis Power is off";; esac`, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		err := s.hw.Power().SetPowerState(ctx, drivertest.New(s.node), states.PowerOn, time.Minute)
		Expect(err).To(MatchError(context.DeadlineExceeded))
	})
})
