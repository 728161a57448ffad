package bmc_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"

	"github.com/ferricbm/ferric/tests/lab/bmc"
)

// ipmitool runs one command against b with the given password.
func ipmitool(b *bmc.BMC, password string, args ...string) (string, error) {
	pw := filepath.Join(GinkgoT().TempDir(), "pw")
	Expect(os.WriteFile(pw, []byte(password), 0o600)).To(Succeed())
	full := append([]string{"-I", "lanplus", "-C", "3", "-N", "1", "-R", "1", "-H", b.Address,
		"-p", strconv.Itoa(b.Port), "-U", b.Username, "-f", pw}, args...)
	out, err := exec.Command("ipmitool", full...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func ok(b *bmc.BMC, args ...string) string {
	GinkgoHelper()
	out, err := ipmitool(b, b.Password, args...)
	Expect(err).NotTo(HaveOccurred(), out)
	return out
}

func nextEvent(b *bmc.BMC) bmc.Event {
	GinkgoHelper()
	var ev bmc.Event
	Eventually(b.Events(), 30*time.Second).Should(Receive(&ev))
	return ev
}

var _ = Describe("Fleet", func() {
	var fleet *bmc.Fleet

	BeforeEach(func(ctx SpecContext) {
		var err error
		fleet, err = bmc.Start(ctx, 3, bmc.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(fleet.Stop()).To(Succeed()) })
	})

	It("runs BMCs on distinct ports, each answering only its own credentials", func() {
		Expect(fleet.BMCs).To(HaveLen(3))
		ports := map[int]bool{}
		for _, b := range fleet.BMCs {
			ports[b.Port] = true
			Expect(ok(b, "power", "status")).To(Equal("Chassis Power is off"))
		}
		Expect(ports).To(HaveLen(3))
		a, b := fleet.BMCs[0], fleet.BMCs[1]
		Expect(a.Password).NotTo(Equal(b.Password))
		out, err := ipmitool(a, b.Password, "power", "status")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("Unable to establish IPMI v2 / RMCP+ session"))
	})

	It("keeps power and boot device in the hook state and reports each change as an event", func() {
		b := fleet.BMCs[0]
		ok(b, "chassis", "bootdev", "pxe")
		Expect(nextEvent(b)).To(MatchFields(IgnoreExtras, Fields{"Kind": Equal(bmc.KindBoot), "Value": Equal("pxe")}))
		ok(b, "power", "on")
		Expect(nextEvent(b)).To(MatchFields(IgnoreExtras, Fields{
			"Kind": Equal(bmc.KindPower), "Value": Equal("on"), "Power": BeTrue(), "Boot": Equal("pxe")}))
		Expect(b.PowerState()).To(Equal(bmc.PowerOn))
		Expect(b.BootDevice()).To(Equal("pxe"))
		Expect(ok(b, "chassis", "bootparam", "get", "5")).To(ContainSubstring("Boot Device Selector : Force PXE"))

		ok(b, "chassis", "bootdev", "disk")
		Expect(nextEvent(b).Value).To(Equal("default"))
		Expect(b.BootDevice()).To(Equal("default"))

		ok(b, "power", "reset")
		Expect(nextEvent(b)).To(MatchFields(IgnoreExtras, Fields{"Kind": Equal(bmc.KindReset), "Power": BeTrue()}))

		// Other BMCs saw nothing.
		Consistently(fleet.BMCs[1].Events(), 100*time.Millisecond).ShouldNot(Receive())
		Expect(fleet.BMCs[1].PowerState()).To(Equal(bmc.PowerOff))
	})

	It("powers a cycled machine off and then on again by itself", func() {
		b := fleet.BMCs[0]
		ok(b, "power", "on")
		nextEvent(b)
		ok(b, "power", "cycle")
		Expect(nextEvent(b)).To(MatchFields(IgnoreExtras, Fields{"Kind": Equal(bmc.KindPower), "Value": Equal("off")}))
		Expect(nextEvent(b)).To(MatchFields(IgnoreExtras, Fields{"Kind": Equal(bmc.KindPower), "Value": Equal("on")}))
		Expect(ok(b, "power", "status")).To(Equal("Chassis Power is on"))
	})

	It("turns a soft power off into an OS shutdown, unless the OS ignores it", func() {
		b := fleet.BMCs[2]
		ok(b, "power", "on")
		nextEvent(b)
		Expect(b.IgnoreShutdown(true)).To(Succeed())
		ok(b, "power", "soft")
		Expect(nextEvent(b)).To(MatchFields(IgnoreExtras, Fields{"Kind": Equal(bmc.KindShutdown), "Power": BeTrue()}))
		Expect(ok(b, "power", "status")).To(Equal("Chassis Power is on"))

		Expect(b.IgnoreShutdown(false)).To(Succeed())
		ok(b, "power", "soft")
		Expect(nextEvent(b)).To(MatchFields(IgnoreExtras, Fields{"Kind": Equal(bmc.KindShutdown), "Power": BeFalse()}))
		Expect(ok(b, "power", "status")).To(Equal("Chassis Power is off"))
	})

	It("lets the lab change the power from inside the machine", func() {
		b := fleet.BMCs[1]
		Expect(b.SetPower(true)).To(Succeed())
		Expect(ok(b, "power", "status")).To(Equal("Chassis Power is on"))
		Expect(b.SetPower(false)).To(Succeed())
		Expect(ok(b, "power", "status")).To(Equal("Chassis Power is off"))
	})

	It("stops, freezes and restarts one BMC, keeping its machine's state", func(ctx SpecContext) {
		b := fleet.BMCs[0]
		ok(b, "power", "on")
		Expect(b.Freeze()).To(Succeed())
		_, err := ipmitool(b, b.Password, "power", "status")
		Expect(err).To(HaveOccurred())
		Expect(b.Thaw()).To(Succeed())
		Expect(ok(b, "power", "status")).To(Equal("Chassis Power is on"))

		pid := b.PID()
		Expect(b.Stop()).To(Succeed())
		Expect(b.PID()).To(BeZero())
		Expect(processAlive(pid)).To(BeFalse())
		_, err = ipmitool(b, b.Password, "power", "status")
		Expect(err).To(HaveOccurred())
		Expect(ok(fleet.BMCs[1], "power", "status")).To(Equal("Chassis Power is off"))

		Expect(b.Start(ctx)).To(Succeed())
		Expect(ok(b, "power", "status")).To(Equal("Chassis Power is on"))
	})
})

var _ = Describe("Fleet.Stop", func() {
	It("ends only its own processes, frees the ports, closes events and removes its files", func(ctx SpecContext) {
		fleet, err := bmc.Start(ctx, 2, bmc.Options{Username: "root", Password: "calvin"})
		Expect(err).NotTo(HaveOccurred())
		other, err := bmc.Start(ctx, 1, bmc.Options{})
		Expect(err).NotTo(HaveOccurred())
		defer func() { _ = other.Stop() }()

		b := fleet.BMCs[0]
		Expect(b.Username).To(Equal("root"))
		Expect(ok(b, "power", "status")).To(Equal("Chassis Power is off"))
		pids := []int{fleet.BMCs[0].PID(), fleet.BMCs[1].PID()}
		ports := []int{fleet.BMCs[0].Port, fleet.BMCs[1].Port}
		dir := filepath.Dir(b.Dir)
		events := b.Events()
		Expect(fleet.BMCs[1].Freeze()).To(Succeed())

		Expect(fleet.Stop()).To(Succeed())
		for _, pid := range pids {
			Expect(processAlive(pid)).To(BeFalse())
		}
		for _, port := range ports {
			Expect(udpFree(port)).To(BeTrue())
		}
		Expect(dir).NotTo(BeADirectory())
		Eventually(events).Should(BeClosed())
		Expect(ok(other.BMCs[0], "power", "status")).To(Equal("Chassis Power is off"))
	})
})
