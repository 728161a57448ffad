package bmc_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferricbm/ferric/conductor/driver/drivertest"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/conductor/driver/ipmi"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/tests/lab/bmc"
)

// syncBuffer collects log output written from several goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func fastIPMI() config.IPMI {
	c := config.Defaults().IPMI
	c.CommandRetryTimeout = 30 * time.Second
	c.MinCommandInterval = 20 * time.Millisecond
	c.ConnectTimeout = time.Second
	c.PowerStatePollInterval = 100 * time.Millisecond
	c.AdditionalRetryableIPMIErrors = []string{bmc.LateAnswer}
	return c
}

func newHardware(c config.IPMI) (*ipmi.Hardware, *syncBuffer) {
	logs := &syncBuffer{}
	log := logrus.New()
	log.SetOutput(logs)
	log.SetLevel(logrus.DebugLevel)
	return ipmi.New(ipmi.Options{IPMI: c, PowerStateChangeTimeout: 30 * time.Second,
		SoftPowerOffTimeout: 30 * time.Second, Log: log}), logs
}

func nodeFor(b *bmc.BMC) *model.Node {
	return &model.Node{UUID: "node-" + strconv.Itoa(b.Port), Driver: ipmi.Name, DriverInfo: model.JSONObject{
		"ipmi_address": b.Address, "ipmi_port": float64(b.Port), "ipmi_username": b.Username, "ipmi_password": b.Password,
	}}
}

// awaitEvent skips events until one matches: the BMC's events are tailed
// from a file, so those of earlier actions may still be on their way.
func awaitEvent(b *bmc.BMC, kind, value string) {
	GinkgoHelper()
	Eventually(b.Events(), 30*time.Second).Should(Receive(MatchFields(IgnoreExtras, Fields{"Kind": Equal(kind), "Value": Equal(value)})))
}

func drain(b *bmc.BMC) {
	for {
		select {
		case <-b.Events():
		default:
			return
		}
	}
}

// ipmitoolProcs lists running ipmitool processes aimed at port, with
// their command lines.
func ipmitoolProcs(port int) map[int]string {
	found := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if filepath.Base(args[0]) != "ipmitool" {
			continue
		}
		for i, a := range args {
			if a == "-p" && i+1 < len(args) && args[i+1] == strconv.Itoa(port) {
				if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil &&
					!strings.Contains(string(stat[bytes.LastIndexByte(stat, ')')+1:]), " Z ") {
					found[pid] = strings.Join(args, " ")
				}
			}
		}
	}
	return found
}

var _ = Describe("the ipmi driver against lab BMCs", Ordered, func() {
	var (
		fleet *bmc.Fleet
		hw    *ipmi.Hardware
		logs  *syncBuffer
	)

	BeforeAll(func(ctx SpecContext) {
		var err error
		fleet, err = bmc.Start(ctx, 10, bmc.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(fleet.Stop()).To(Succeed()) })
		hw, logs = newHardware(fastIPMI())
	})

	It("powers on, off and reboots, as both ipmitool and the machine see it", func(ctx SpecContext) {
		b := fleet.BMCs[0]
		drain(b)
		t := drivertest.New(nodeFor(b))
		p := hw.Power()
		Expect(p.GetPowerState(ctx, t)).To(Equal(states.PowerOff))

		Expect(p.SetPowerState(ctx, t, states.PowerOn, 0)).To(Succeed())
		Expect(b.PowerState()).To(Equal(bmc.PowerOn))
		Expect(p.GetPowerState(ctx, t)).To(Equal(states.PowerOn))
		awaitEvent(b, bmc.KindPower, "on")

		Expect(p.Reboot(ctx, t, false, 0)).To(Succeed())
		Expect(nextEvent(b)).To(MatchFields(IgnoreExtras, Fields{"Kind": Equal(bmc.KindPower), "Value": Equal("off")}))
		Expect(nextEvent(b)).To(MatchFields(IgnoreExtras, Fields{"Kind": Equal(bmc.KindPower), "Value": Equal("on")}))
		Expect(b.PowerState()).To(Equal(bmc.PowerOn))

		Expect(p.SetPowerState(ctx, t, states.PowerOff, 0)).To(Succeed())
		Expect(b.PowerState()).To(Equal(bmc.PowerOff))
		Expect(p.GetPowerState(ctx, t)).To(Equal(states.PowerOff))

		// Rebooting a machine that is off powers it on.
		Expect(p.Reboot(ctx, t, false, 0)).To(Succeed())
		Expect(b.PowerState()).To(Equal(bmc.PowerOn))
	})

	It("sees a machine that turned itself off, and powers it on again", func(ctx SpecContext) {
		b := fleet.BMCs[1]
		t := drivertest.New(nodeFor(b))
		p := hw.Power()
		Expect(p.SetPowerState(ctx, t, states.PowerOn, 0)).To(Succeed())
		drain(b)
		Expect(b.SetPower(false)).To(Succeed())
		Expect(p.GetPowerState(ctx, t)).To(Equal(states.PowerOff))
		Expect(p.SetPowerState(ctx, t, states.PowerOn, 5*time.Second)).To(Succeed())
		Expect(b.PowerState()).To(Equal(bmc.PowerOn))
	})

	It("soft powers off through the OS, and fails in time when the OS ignores it", func(ctx SpecContext) {
		b := fleet.BMCs[2]
		t := drivertest.New(nodeFor(b))
		p := hw.Power()
		Expect(p.SetPowerState(ctx, t, states.PowerOn, 0)).To(Succeed())
		awaitEvent(b, bmc.KindPower, "on")
		Expect(p.SetPowerState(ctx, t, states.SoftPowerOff, 0)).To(Succeed())
		Expect(nextEvent(b)).To(MatchFields(IgnoreExtras, Fields{"Kind": Equal(bmc.KindShutdown), "Power": BeFalse()}))
		Expect(b.PowerState()).To(Equal(bmc.PowerOff))

		Expect(p.Reboot(ctx, t, true, 0)).To(Succeed())
		Expect(b.PowerState()).To(Equal(bmc.PowerOn))

		Expect(b.IgnoreShutdown(true)).To(Succeed())
		DeferCleanup(b.IgnoreShutdown, false)
		err := p.SetPowerState(ctx, t, states.SoftPowerOff, 500*time.Millisecond)
		Expect(errs.KindOf(err)).To(Equal(errs.KindPowerStateFailure))
		Expect(err.Error()).To(HavePrefix("Failed to set node power state to power off. It was still power on after 500ms."))
		Expect(b.PowerState()).To(Equal(bmc.PowerOn))
	})

	It("sets and reads the boot device; ipmi_sim keeps only the device", func(ctx SpecContext) {
		b := fleet.BMCs[3]
		node := nodeFor(b)
		t := drivertest.New(node)
		m := hw.Management()
		for device, simName := range map[string]string{"pxe": "pxe", "disk": "default", "cdrom": "cdrom", "bios": "bios"} {
			for _, persistent := range []bool{false, true} {
				Expect(m.SetBootDevice(ctx, t, device, persistent)).To(Succeed())
				Expect(b.BootDevice()).To(Equal(simName))
				got, err := m.GetBootDevice(ctx, t)
				Expect(err).NotTo(HaveOccurred())
				Expect(*got.Device).To(Equal(device))
				// ipmi_sim drops the persistent bit: every setting reads
				// back as one-time.
				Expect(*got.Persistent).To(BeFalse())
			}
		}

		// UEFI nodes send efiboot; ipmi_sim accepts and drops it too.
		node.Properties = model.JSONObject{"capabilities": "boot_mode:uefi"}
		Expect(m.SetBootDevice(ctx, t, "pxe", true)).To(Succeed())
		Expect(b.BootDevice()).To(Equal("pxe"))

		// ipmi_sim refuses "safe" (with ipmitool exiting 0); the refusal
		// still reaches the caller.
		node.Properties = nil
		err := m.SetBootDevice(ctx, t, "safe", false)
		Expect(errs.KindOf(err)).To(Equal(ipmi.KindIPMIFailure))
		Expect(err.Error()).To(ContainSubstring("IPMI call failed: chassis bootdev safe."))
		Expect(err.Error()).To(ContainSubstring("The BMC refused the request. ipmitool: Set Chassis Boot Parameter 5 failed: Unspecified error"))
		Expect(b.BootDevice()).To(Equal("pxe"))
	})

	It("speaks IPMI 1.5 and honours the node's cipher suite", func(ctx SpecContext) {
		b := fleet.BMCs[4]
		node := nodeFor(b)
		node.DriverInfo["ipmi_protocol_version"] = "1.5"
		Expect(hw.Power().GetPowerState(ctx, drivertest.New(node))).To(Equal(states.PowerOff))

		node = nodeFor(b)
		node.DriverInfo["ipmi_cipher_suite"] = 17
		_, err := hw.Power().GetPowerState(ctx, drivertest.New(node))
		Expect(errs.KindOf(err)).To(Equal(ipmi.KindIPMIFailure))
		Expect(err.Error()).To(ContainSubstring("does not offer the requested cipher suite"))
	})

	It("reports a wrong password or user clearly, without the password anywhere", func(ctx SpecContext) {
		b := fleet.BMCs[5]
		node := nodeFor(b)
		wrong := "Wr0ngPassw0rd!x"
		node.DriverInfo["ipmi_password"] = wrong
		_, err := hw.Power().GetPowerState(ctx, drivertest.New(node))
		Expect(errs.KindOf(err)).To(Equal(ipmi.KindIPMIFailure))
		Expect(errs.Status(err)).To(Equal(500))
		Expect(err.Error()).To(ContainSubstring("rejected the password of user \"" + b.Username + "\""))
		Expect(err.Error()).To(ContainSubstring("RAKP 2 HMAC is invalid"))

		node.DriverInfo["ipmi_username"] = "nobody"
		err = hw.Power().SetPowerState(ctx, drivertest.New(node), states.PowerOn, 0)
		Expect(err).To(MatchError(ContainSubstring(`does not know user "nobody"`)))
		Expect(b.PowerState()).To(Equal(bmc.PowerOff))

		for _, text := range []string{err.Error(), logs.String()} {
			Expect(text).NotTo(ContainSubstring(wrong))
			Expect(text).NotTo(ContainSubstring(b.Password))
		}
		Expect(logs.String()).To(ContainSubstring("IPMI command failed"))
	})

	It("sets ten BMCs concurrently", func(ctx SpecContext) {
		var wg sync.WaitGroup
		errors := make([]error, len(fleet.BMCs))
		for i, b := range fleet.BMCs {
			wg.Go(func() {
				t := drivertest.New(nodeFor(b))
				if errors[i] = hw.Power().SetPowerState(ctx, t, states.PowerOff, 0); errors[i] != nil {
					return
				}
				if errors[i] = hw.Management().SetBootDevice(ctx, t, "pxe", false); errors[i] != nil {
					return
				}
				errors[i] = hw.Power().Reboot(ctx, t, false, 0)
			})
		}
		wg.Wait()
		for i, b := range fleet.BMCs {
			Expect(errors[i]).NotTo(HaveOccurred(), "BMC %d", i)
			Expect(b.PowerState()).To(Equal(bmc.PowerOn))
			Expect(b.BootDevice()).To(Equal("pxe"))
		}
	})

	It("gives up on a port where nothing answers, leaving no ipmitool behind", func(ctx SpecContext) {
		b := fleet.BMCs[6]
		Expect(b.Stop()).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(b.Start(ctx)).To(Succeed()) })
		_, err := hw.Power().GetPowerState(ctx, drivertest.New(nodeFor(b)))
		Expect(errs.KindOf(err)).To(Equal(ipmi.KindIPMIFailure))
		Expect(err.Error()).To(ContainSubstring("No answer from the BMC at 127.0.0.1:" + strconv.Itoa(b.Port)))
		Expect(ipmitoolProcs(b.Port)).To(BeEmpty())
	})

	It("kills a hung ipmitool when the command's time is up, and never shows the password", func(ctx SpecContext) {
		b := fleet.BMCs[7]
		c := fastIPMI()
		c.CommandRetryTimeout = 2 * time.Second
		c.ConnectTimeout = 5 * time.Second
		c.UseIpmitoolRetries = true // ipmitool alone would keep trying far longer
		slow, slowLogs := newHardware(c)
		Expect(b.Freeze()).To(Succeed())
		DeferCleanup(b.Thaw)

		done := make(chan error, 1)
		start := time.Now()
		go func() {
			_, err := slow.Power().GetPowerState(context.Background(), drivertest.New(nodeFor(b)))
			done <- err
		}()
		var seen map[int]string
		Eventually(func() map[int]string { seen = ipmitoolProcs(b.Port); return seen }, 5*time.Second, 5*time.Millisecond).ShouldNot(BeEmpty())
		var pwFile string
		for _, cmdline := range seen {
			Expect(cmdline).NotTo(ContainSubstring(b.Password))
			Expect(cmdline).To(ContainSubstring("-C 3"))
			Expect(cmdline).To(ContainSubstring("-N 5 -R 1 "))
			fields := strings.Fields(cmdline)
			for i, f := range fields {
				if f == "-f" {
					pwFile = fields[i+1]
				}
			}
		}
		Expect(pwFile).NotTo(BeEmpty())
		info, err := os.Stat(pwFile)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)))
		Expect(os.ReadFile(pwFile)).To(Equal([]byte(b.Password)))

		var callErr error
		Eventually(done, 10*time.Second).Should(Receive(&callErr))
		// The configured bound, plus slack for a loaded machine.
		Expect(time.Since(start)).To(BeNumerically("<", c.CommandRetryTimeout+5*time.Second))
		Expect(errs.KindOf(callErr)).To(Equal(ipmi.KindIPMIFailure))
		Expect(callErr.Error()).To(ContainSubstring("ipmitool was stopped"))
		Expect(callErr.Error()).NotTo(ContainSubstring(b.Password))
		Expect(slowLogs.String()).NotTo(ContainSubstring(b.Password))
		Expect(ipmitoolProcs(b.Port)).To(BeEmpty())
		Expect(pwFile).NotTo(BeAnExistingFile())
	})
})
