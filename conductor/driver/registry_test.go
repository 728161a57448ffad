package driver_test

import (
	"errors"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/driver/builtin"
	"github.com/ferricbm/ferric/conductor/driver/drivertest"
	"github.com/ferricbm/ferric/conductor/driver/fake"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
)

func ptr[T any](v T) *T { return &v }

var _ = Describe("Registry", func() {
	var reg *driver.Registry
	BeforeEach(func() {
		var err error
		reg, err = builtin.Registry([]string{fake.Name})
		Expect(err).NotTo(HaveOccurred())
	})

	It("refuses to enable a hardware type it does not know", func() {
		_, err := builtin.Registry([]string{"idrac"})
		Expect(errs.KindOf(err)).To(Equal(errs.KindDriverNotFound))
	})

	It("lists the enabled hardware types and their defaults", func() {
		Expect(reg.HardwareTypes()).To(Equal([]string{fake.Name}))
		d, err := reg.Defaults(fake.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(d).To(HaveKeyWithValue(hwcatalog.Power, "fake"))
		Expect(d).To(HaveKeyWithValue(hwcatalog.Deploy, "fake"))
		Expect(d).To(HaveKeyWithValue(hwcatalog.Network, "noop"))
		Expect(d).To(HaveLen(len(hwcatalog.InterfaceTypes)))
		names, err := reg.Enabled(fake.Name, hwcatalog.Inspect)
		Expect(err).NotTo(HaveOccurred())
		Expect(names).To(Equal([]string{"fake", "no-inspect"}))
		_, err = reg.Defaults("ipmi")
		Expect(errs.KindOf(err)).To(Equal(errs.KindDriverNotFound))
	})

	It("fills unset interfaces with defaults and keeps the ones a node names", func() {
		n := &model.Node{Driver: fake.Name, InspectInterface: ptr("no-inspect")}
		Expect(reg.ResolveInterfaces(n)).To(Succeed())
		Expect(*n.InspectInterface).To(Equal("no-inspect"))
		Expect(*n.PowerInterface).To(Equal("fake"))
		Expect(*n.BIOSInterface).To(Equal("fake"))
		Expect(*n.VendorInterface).To(Equal("fake"))
		Expect(*n.RAIDInterface).To(Equal("fake"))
		Expect(*n.ConsoleInterface).To(Equal("fake"))
		Expect(*n.RescueInterface).To(Equal("fake"))
		Expect(*n.NetworkInterface).To(Equal("noop"))
	})

	It("rejects an interface the hardware type does not offer with 400", func() {
		n := &model.Node{Driver: fake.Name, PowerInterface: ptr("ipmitool")}
		err := reg.ValidateInterfaces(n)
		Expect(errs.KindOf(err)).To(Equal(errs.KindInvalidParameterValue))
		Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
		Expect(err.Error()).To(ContainSubstring("ipmitool"))
		Expect(reg.ResolveInterfaces(n)).NotTo(Succeed())
		Expect(n.DeployInterface).To(BeNil())
	})

	It("lists one conductor interface row per implementation, the defaults marked", func() {
		rows := reg.Catalog().Rows()
		Expect(rows).To(ContainElement(model.ConductorHardwareInterface{HardwareType: fake.Name, InterfaceType: "inspect", InterfaceName: "fake", Default: true}))
		Expect(rows).To(ContainElement(model.ConductorHardwareInterface{HardwareType: fake.Name, InterfaceType: "inspect", InterfaceName: "no-inspect", Default: false}))
		implementations := 0
		for _, it := range hwcatalog.InterfaceTypes {
			names, err := reg.Enabled(fake.Name, it)
			Expect(err).NotTo(HaveOccurred())
			Expect(names).NotTo(BeEmpty())
			implementations += len(names)
		}
		Expect(rows).To(HaveLen(implementations))
	})

	It("loads a node's driver and refuses inspection through no-inspect", func(ctx SpecContext) {
		n := &model.Node{UUID: "n1", Driver: fake.Name, InspectInterface: ptr("no-inspect")}
		d, err := reg.Load(n)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.InterfaceName(hwcatalog.Inspect)).To(Equal("no-inspect"))
		_, err = d.Inspect.InspectHardware(ctx, drivertest.New(n))
		Expect(errs.KindOf(err)).To(Equal(errs.KindUnsupportedDriverExtension))
		steps, err := d.CleanSteps(ctx, drivertest.New(n))
		Expect(err).NotTo(HaveOccurred())
		Expect(steps).To(ContainElement(HaveField("Step", "create_configuration")))
		Expect(steps).To(HaveEach(HaveField("Priority", 0)), "no step runs in automated cleaning")
	})
})

var _ = Describe("fake-hardware", func() {
	var (
		hw  *fake.Hardware
		d   *driver.Driver
		n   *model.Node
		tsk *drivertest.Task
	)
	BeforeEach(func() {
		hw = fake.New()
		reg, err := driver.NewRegistry([]string{fake.Name}, hw.HardwareType())
		Expect(err).NotTo(HaveOccurred())
		n = &model.Node{UUID: "node-1", Driver: fake.Name}
		d, err = reg.Load(n)
		Expect(err).NotTo(HaveOccurred())
		tsk = drivertest.New(n)
	})

	It("reports the recorded power state until told another, then remembers it", func(ctx SpecContext) {
		Expect(d.Power.GetPowerState(ctx, tsk)).To(Equal(states.PowerOff))
		n.PowerState = ptr(states.PowerOn)
		Expect(d.Power.GetPowerState(ctx, tsk)).To(Equal(states.PowerOn))
		Expect(d.Power.SetPowerState(ctx, tsk, states.SoftPowerOff, 0)).To(Succeed())
		Expect(d.Power.GetPowerState(ctx, tsk)).To(Equal(states.PowerOff))
		Expect(d.Power.Reboot(ctx, tsk, false, 0)).To(Succeed())
		Expect(d.Power.GetPowerState(ctx, tsk)).To(Equal(states.PowerOn))
		hw.SetPowerState(n.UUID, states.PowerOff)
		Expect(d.Power.GetPowerState(ctx, tsk)).To(Equal(states.PowerOff))
	})

	It("finishes deploy and tear down synchronously", func(ctx SpecContext) {
		Expect(d.Deploy.Deploy(ctx, tsk)).To(Equal(driver.Done))
		Expect(d.Deploy.TearDown(ctx, tsk)).To(Equal(driver.Done))
		Expect(d.Deploy.PrepareCleaning(ctx, tsk)).To(Equal(driver.Done))
	})

	It("fails, panics or stalls an operation as injected, for that node only", func(ctx SpecContext) {
		hw.Inject(n.UUID, fake.OpDeploy, fake.Fault{Err: errors.New("nope")})
		_, err := d.Deploy.Deploy(ctx, tsk)
		Expect(err).To(MatchError("nope"))
		other := drivertest.New(&model.Node{UUID: "node-2", Driver: fake.Name})
		Expect(d.Deploy.Deploy(ctx, other)).To(Equal(driver.Done))

		hw.Inject(n.UUID, fake.OpTearDown, fake.Fault{Panic: "boom"})
		Expect(func() { _, _ = d.Deploy.TearDown(ctx, tsk) }).To(PanicWith("boom"))

		block := make(chan struct{})
		hw.Inject(n.UUID, fake.OpPrepare, fake.Fault{Block: block})
		done := make(chan error, 1)
		go func() { done <- d.Deploy.Prepare(ctx, tsk) }()
		Consistently(done, 50*time.Millisecond).ShouldNot(Receive())
		close(block)
		Eventually(done).Should(Receive(BeNil()))

		hw.Clear(n.UUID)
		Expect(d.Deploy.Deploy(ctx, tsk)).To(Equal(driver.Done))
	})

	It("keeps the boot device it was given", func(ctx SpecContext) {
		bd, err := d.Management.GetBootDevice(ctx, tsk)
		Expect(err).NotTo(HaveOccurred())
		Expect(*bd.Device).To(Equal("pxe"))
		Expect(d.Management.SetBootDevice(ctx, tsk, "cdrom", true)).To(Succeed())
		bd, _ = d.Management.GetBootDevice(ctx, tsk)
		Expect(*bd.Device).To(Equal("cdrom"))
		Expect(*bd.Persistent).To(BeTrue())
		Expect(errs.KindOf(d.Management.SetBootDevice(ctx, tsk, "floppy", false))).To(Equal(errs.KindInvalidParameterValue))
	})
})

var _ = Describe("Optional capabilities", func() {
	var (
		reg *driver.Registry
		d   *driver.Driver
	)
	BeforeEach(func() {
		var err error
		reg, err = builtin.Registry([]string{fake.Name})
		Expect(err).NotTo(HaveOccurred())
		n := &model.Node{Driver: fake.Name, ConsoleInterface: ptr("no-console")}
		Expect(reg.ResolveInterfaces(n)).To(Succeed())
		d, err = reg.Load(n)
		Expect(err).NotTo(HaveOccurred())
	})

	It("finds a capability the node's interface has", func() {
		raid, err := driver.Require[driver.RAIDInterface](d, hwcatalog.RAID)
		Expect(err).NotTo(HaveOccurred())
		Expect(raid).To(BeIdenticalTo(d.Interface(hwcatalog.RAID)))
		_, ok := driver.Lookup[driver.VendorInterface](d, hwcatalog.Vendor)
		Expect(ok).To(BeTrue())
	})

	It("reports a missing one as an unsupported driver extension naming the hardware type", func() {
		_, ok := driver.Lookup[driver.ConsoleInterface](d, hwcatalog.Console)
		Expect(ok).To(BeFalse())
		_, err := driver.Require[driver.ConsoleInterface](d, hwcatalog.Console)
		Expect(errs.KindOf(err)).To(Equal(errs.KindUnsupportedDriverExtension))
		Expect(err.Error()).To(ContainSubstring("Driver fake-hardware does not support console"))
	})

	It("resolves a task's driver and capability together", func() {
		t := drivertest.New(&model.Node{Driver: fake.Name, ConsoleInterface: ptr("no-console")})
		_, _, err := driver.RequireFor[driver.RAIDInterface](t, hwcatalog.RAID)
		Expect(err).To(MatchError(drivertest.ErrNoDriver))
		t.Drv = d
		got, raid, err := driver.RequireFor[driver.RAIDInterface](t, hwcatalog.RAID)
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(BeIdenticalTo(d))
		Expect(raid).To(BeIdenticalTo(d.Interface(hwcatalog.RAID)))
		_, _, err = driver.RequireFor[driver.ConsoleInterface](t, hwcatalog.Console)
		Expect(errs.KindOf(err)).To(Equal(errs.KindUnsupportedDriverExtension))
	})

	It("looks driver-level calls up in the hardware type's defaults", func() {
		_, err := driver.RequireDefault[driver.VendorInterface](reg, fake.Name, hwcatalog.Vendor)
		Expect(err).NotTo(HaveOccurred())
		_, err = driver.RequireDefault[driver.ConsoleInterface](reg, fake.Name, hwcatalog.Console)
		Expect(err).NotTo(HaveOccurred(), "fake-hardware's default console is fake")
		_, err = driver.RequireDefault[driver.HeartbeatHandler](reg, fake.Name, hwcatalog.Deploy)
		Expect(errs.KindOf(err)).To(Equal(errs.KindUnsupportedDriverExtension))
		_, err = driver.RequireDefault[driver.VendorInterface](reg, "idrac", hwcatalog.Vendor)
		Expect(errs.KindOf(err)).To(Equal(errs.KindDriverNotFound))
	})
})
