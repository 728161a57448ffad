package ipmi_test

import (
	"context"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/driver/drivertest"
	"github.com/ferricbm/ferric/conductor/driver/fake"
	"github.com/ferricbm/ferric/conductor/driver/ipmi"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/model"
)

var _ = Describe("driver_info validation", func() {
	hw := ipmi.New(ipmi.OptionsFrom(config.Defaults(), nil))

	validate := func(info model.JSONObject) error {
		t := drivertest.New(&model.Node{UUID: "n1", Driver: ipmi.Name, DriverInfo: info})
		perr := hw.Power().Validate(context.Background(), t)
		merr := hw.Management().Validate(context.Background(), t)
		Expect(errs.Message(merr)).To(Equal(errs.Message(perr)), "power and management agree")
		return perr
	}

	It("accepts a complete driver_info without contacting the BMC", func() {
		Expect(validate(model.JSONObject{
			"ipmi_address": "192.0.2.1", "ipmi_port": 6230, "ipmi_username": "admin", "ipmi_password": "pw",
			"ipmi_priv_level": "OPERATOR", "ipmi_cipher_suite": "17", "ipmi_bridging": "no",
			"ipmi_protocol_version": "2.0", "ipmi_terminal_port": "8023", "ipmi_disable_boot_timeout": "false",
		})).To(Succeed())
		Expect(validate(model.JSONObject{"ipmi_address": "bmc.example.com"})).To(Succeed())
	})

	It("requires ipmi_address with Ironic's MissingParameterValue", func() {
		for _, info := range []model.JSONObject{nil, {"ipmi_address": ""}, {"ipmi_username": "admin"}} {
			err := validate(info)
			Expect(errs.KindOf(err)).To(Equal(errs.KindMissingParameterValue))
			Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
			Expect(err.Error()).To(Equal("Missing the following IPMI credentials in node's driver_info: ['ipmi_address']."))
		}
	})

	DescribeTable("rejects bad values with InvalidParameterValue",
		func(key string, value any, message string) {
			err := validate(model.JSONObject{"ipmi_address": "192.0.2.1", key: value})
			Expect(errs.KindOf(err)).To(Equal(errs.KindInvalidParameterValue))
			Expect(err.Error()).To(Equal(message))
		},
		Entry(nil, "ipmi_port", "abc", `ipmi_port "abc" is not a valid integer.`),
		Entry(nil, "ipmi_port", 70000.0, `ipmi_port "70000" is out of range. Valid port numbers must be between 1 and 65535.`),
		Entry(nil, "ipmi_port", 0.0, `ipmi_port "0" is out of range. Valid port numbers must be between 1 and 65535.`),
		Entry(nil, "ipmi_terminal_port", "x", `ipmi_terminal_port "x" is not a valid integer.`),
		Entry(nil, "ipmi_priv_level", "ROOT", "Invalid privilege level value:ROOT, the valid value can be one of ADMINISTRATOR, CALLBACK, OPERATOR, USER"),
		Entry(nil, "ipmi_bridging", "sideways", "Invalid value for ipmi_bridging: sideways, the valid value can be one of: ['single', 'dual', 'no']"),
		Entry(nil, "ipmi_bridging", "dual", `Value for ipmi_bridging is provided as dual, but IPMI bridging is not supported by this conductor; use "no".`),
		Entry(nil, "ipmi_protocol_version", "3.0", "Invalid IPMI protocol version value 3.0, the valid value can be one of 1.5, 2.0"),
		Entry(nil, "ipmi_cipher_suite", "eighteen", `ipmi_cipher_suite "eighteen" is not a valid IPMI cipher suite: expected an integer from 0 to 17.`),
		Entry(nil, "ipmi_cipher_suite", 18.0, `ipmi_cipher_suite "18" is not a valid IPMI cipher suite: expected an integer from 0 to 17.`),
		Entry(nil, "ipmi_disable_boot_timeout", "maybe", `ipmi_disable_boot_timeout "maybe" is not a boolean.`),
		Entry(nil, "ipmi_password", []any{"a"}, "ipmi_password must be a string."),
	)

	It("never puts the password into a validation error", func() {
		err := validate(model.JSONObject{"ipmi_address": "192.0.2.1", "ipmi_password": "hunter2hunter2", "ipmi_port": "hunter2hunter2"})
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("ipmi_port"))
		err = validate(model.JSONObject{"ipmi_address": "192.0.2.1", "ipmi_password": "hunter2hunter2", "ipmi_priv_level": "x"})
		Expect(err.Error()).NotTo(ContainSubstring("hunter2"))
	})
})

var _ = Describe("hardware type", func() {
	hw := ipmi.New(ipmi.OptionsFrom(config.Defaults(), nil))
	fakeHW := fake.New().HardwareType()

	It("is complete once boot and deploy implementations are given", func() {
		_, err := driver.NewRegistry([]string{ipmi.Name}, hw.HardwareType(nil))
		Expect(err).To(MatchError(ContainSubstring("no boot interface implementation")))

		reg, err := driver.NewRegistry([]string{ipmi.Name}, hw.HardwareType(map[hwcatalog.InterfaceType][]driver.Implementation{
			hwcatalog.Boot:   fakeHW.Interfaces[hwcatalog.Boot],
			hwcatalog.Deploy: fakeHW.Interfaces[hwcatalog.Deploy],
		}))
		Expect(err).NotTo(HaveOccurred())
		defaults, err := reg.Defaults(ipmi.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(defaults).To(HaveKeyWithValue(hwcatalog.Power, "ipmitool"))
		Expect(defaults).To(HaveKeyWithValue(hwcatalog.Management, "ipmitool"))
		Expect(defaults).To(HaveKeyWithValue(hwcatalog.Inspect, "no-inspect"))

		node := &model.Node{UUID: "n1", Driver: ipmi.Name}
		d, err := reg.Load(node)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Power.SupportedPowerStates(context.Background(), drivertest.New(node))).To(ConsistOf(
			"power on", "power off", "rebooting", "soft power off", "soft rebooting"))
		Expect(d.Management.SupportedBootDevices(context.Background(), drivertest.New(node))).To(Equal(
			[]string{"pxe", "disk", "cdrom", "bios", "safe"}))

		props, err := reg.Properties(ipmi.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(props).To(HaveKeyWithValue("ipmi_address", ContainSubstring("Required.")))
		Expect(props).To(HaveKey("ipmi_password"))
		Expect(props).To(HaveKey("ipmi_cipher_suite"))
	})

	It("refuses an unknown boot device before contacting the BMC", func() {
		node := &model.Node{UUID: "n1", Driver: ipmi.Name, DriverInfo: model.JSONObject{"ipmi_address": "192.0.2.1"}}
		err := hw.Management().SetBootDevice(context.Background(), drivertest.New(node), "floppy", false)
		Expect(errs.KindOf(err)).To(Equal(errs.KindInvalidParameterValue))
		Expect(err.Error()).To(Equal("Invalid boot device floppy specified."))
	})

	It("refuses a power state it cannot reach", func() {
		node := &model.Node{UUID: "n1", Driver: ipmi.Name, DriverInfo: model.JSONObject{"ipmi_address": "192.0.2.1"}}
		err := hw.Power().SetPowerState(context.Background(), drivertest.New(node), "rebooting", 0)
		Expect(errs.KindOf(err)).To(Equal(errs.KindInvalidParameterValue))
	})
})

var _ = Describe("BootMode", func() {
	DescribeTable("follows deploy, then instance, then node capabilities",
		func(node model.Node, want string) { Expect(ipmi.BootMode(&node)).To(Equal(want)) },
		Entry("default", model.Node{}, "bios"),
		Entry("node capability string", model.Node{Properties: model.JSONObject{"capabilities": "cpu_vt:true,boot_mode:uefi"}}, "uefi"),
		Entry("instance capability object wins over node",
			model.Node{InstanceInfo: model.JSONObject{"capabilities": map[string]any{"boot_mode": "bios"}},
				Properties: model.JSONObject{"capabilities": "boot_mode:uefi"}}, "bios"),
		Entry("instance capabilities as a JSON string", model.Node{InstanceInfo: model.JSONObject{"capabilities": `{"boot_mode": "uefi"}`}}, "uefi"),
		Entry("deploy decision wins", model.Node{DriverInternalInfo: model.JSONObject{"deploy_boot_mode": "uefi"},
			Properties: model.JSONObject{"capabilities": "boot_mode:bios"}}, "uefi"),
	)
})
