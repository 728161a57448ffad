package ilo_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/bmc/ilotest"
	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/driver/ilo"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/secrets"
	"github.com/ferricbm/ferric/pkg/states"
)

type taskCtx struct {
	node  *model.Node
	ports []model.Port
}

func (t taskCtx) Node() *model.Node                           { return t.node }
func (t taskCtx) Ports(context.Context) ([]model.Port, error) { return t.ports, nil }
func (t taskCtx) Shared() bool                                { return false }

// The conductor is not part of these tests.
var errNoConductor = errors.New("no conductor in this test")

func (t taskCtx) Driver() (*driver.Driver, error)                          { return nil, errNoConductor }
func (t taskCtx) ConfigDrive(context.Context) (string, error)              { return "", errNoConductor }
func (t taskCtx) Save(context.Context) error                               { return nil } // the node lives in memory here
func (t taskCtx) ProcessEvent(context.Context, states.Event, string) error { return errNoConductor }
func (t taskCtx) Fail(context.Context, string) error                       { return errNoConductor }

func kindOf(err error) errs.Kind {
	if e, ok := errs.As(err); ok {
		return e.Kind
	}
	return ""
}

// fastConfig polls the power state every second, twice as often as
// Ironic, so that the specs do not wait 2 s per read.
func fastConfig() config.Config {
	cfg := config.Defaults()
	cfg.ILO.PowerWait, cfg.ILO.PowerRetry = 1, 5
	return cfg
}

// startILO serves a fake iLO of model and returns driver_info reaching it.
func startILO(model string, flavor string) (*ilotest.Server, map[string]any) {
	srv, err := ilotest.Start("127.0.0.1:0", ilotest.Options{Username: "admin", Password: "s3cret-pw", Model: model,
		PowerDelay: 300 * time.Millisecond})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(srv.Close)
	ca, err := srv.WriteCAFile(GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
	if flavor == ilo.RedfishName {
		return srv, map[string]any{"redfish_address": "https://127.0.0.1:" + itoa(srv.Port), "redfish_username": "admin",
			"redfish_password": "s3cret-pw", "redfish_verify_ca": ca, "redfish_system_id": "/redfish/v1/Systems/1"}
	}
	return srv, map[string]any{"ilo_address": "127.0.0.1", "client_port": srv.Port, "ilo_username": "admin",
		"ilo_password": "s3cret-pw", "ca_file": ca}
}

var _ = Describe("iLO and Redfish power and management", func() {
	hw := ilo.New(ilo.OptionsFrom(fastConfig(), nil))

	powerOf := func(srv *ilotest.Server) string {
		if srv.Redfish != nil {
			return map[string]string{"On": states.PowerOn, "Off": states.PowerOff}[srv.Redfish.PowerState()]
		}
		return map[string]string{"ON": states.PowerOn, "OFF": states.PowerOff}[srv.RIBCL.Power()]
	}

	for _, c := range []struct{ model, flavor string }{
		{"ProLiant DL360 Gen9", ilo.Name},
		{"ProLiant DL360 Gen10", ilo.Name},
		{"ProLiant DL360 Gen10", ilo.RedfishName},
	} {
		It("powers a "+c.model+" on, off and reboots it through the "+c.flavor+" type", func(ctx SpecContext) {
			srv, info := startILO(c.model, c.flavor)
			f := hw.ILO()
			if c.flavor == ilo.RedfishName {
				f = hw.Redfish()
			}
			power, mgmt := hw.Power(f), hw.Management(f)
			t := taskCtx{node: &model.Node{UUID: "1be26c0b-03f2-4d2e-ae87-c02d7f33c123", DriverInfo: info}}
			Expect(power.Validate(ctx, t)).To(Succeed())

			Expect(power.SetPowerState(ctx, t, states.PowerOn, 0)).To(Succeed())
			Expect(powerOf(srv)).To(Equal(states.PowerOn))
			Expect(power.GetPowerState(ctx, t)).To(Equal(states.PowerOn))

			boots := bootsOf(srv)
			Expect(power.Reboot(ctx, t, false, 0)).To(Succeed())
			Expect(powerOf(srv)).To(Equal(states.PowerOn))
			Expect(bootsOf(srv)).To(BeNumerically(">", boots), "the reboot started the server again")

			Expect(power.SetPowerState(ctx, t, states.PowerOff, 0)).To(Succeed())
			Expect(powerOf(srv)).To(Equal(states.PowerOff))
			Expect(power.GetPowerState(ctx, t)).To(Equal(states.PowerOff))

			Expect(mgmt.SupportedBootDevices(ctx, t)).To(Equal([]string{"pxe", "disk", "cdrom"}))
			Expect(mgmt.SetBootDevice(ctx, t, "cdrom", false)).To(Succeed())
			bd, err := mgmt.GetBootDevice(ctx, t)
			Expect(err).NotTo(HaveOccurred())
			Expect(*bd.Device).To(Equal("cdrom"))
			Expect(*bd.Persistent).To(BeFalse())
			Expect(mgmt.SetBootDevice(ctx, t, "disk", true)).To(Succeed())
			if srv.Redfish == nil {
				Expect(srv.RIBCL.PersistentBoot()[0]).To(Equal("HDD"))
			} else {
				Expect(srv.Redfish.Boot().Target).To(Equal("Hdd"))
			}
			err = mgmt.SetBootDevice(ctx, t, "bios", false)
			Expect(kindOf(err)).To(Equal(errs.KindInvalidParameterValue))
		})
	}

	It("says the credentials were refused, without the password", func(ctx SpecContext) {
		for _, c := range []struct{ model, flavor string }{{"ProLiant DL360 Gen9", ilo.Name}, {"ProLiant DL360 Gen10", ilo.RedfishName}} {
			_, info := startILO(c.model, c.flavor)
			f := hw.ILO()
			key := "ilo_password"
			if c.flavor == ilo.RedfishName {
				f, key = hw.Redfish(), "redfish_password"
			}
			info[key] = "wrong-pw-123"
			t := taskCtx{node: &model.Node{UUID: "n1", DriverInfo: info}}
			_, err := hw.Power(f).GetPowerState(ctx, t)
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring("refused the user name and password of driver_info"))
			Expect(err.Error()).To(ContainSubstring("127.0.0.1"))
			Expect(err.Error()).NotTo(ContainSubstring("wrong-pw-123"))
		}
	})

	It("refuses a BMC whose certificate it cannot verify unless told not to verify", func(ctx SpecContext) {
		srv, info := startILO("ProLiant DL360 Gen9", ilo.Name)
		delete(info, "ca_file")
		t := taskCtx{node: &model.Node{UUID: "n1", DriverInfo: info}}
		_, err := hw.Power(hw.ILO()).GetPowerState(ctx, t)
		Expect(err).To(MatchError(ContainSubstring("certificate")))
		info["ilo_verify_ca"] = "False"
		srv.RIBCL.SetPower(true)
		Expect(hw.Power(hw.ILO()).GetPowerState(ctx, t)).To(Equal(states.PowerOn))
	})

	It("has password keys that API responses mask", func() {
		for _, k := range []string{"ilo_password", "redfish_password"} {
			Expect(secrets.Mask(map[string]any{k: "pw"})).To(Equal(map[string]any{k: secrets.Masked}), k)
		}
	})
})

var _ = Describe("driver_info validation", func() {
	hw := ilo.New(ilo.OptionsFrom(config.Defaults(), nil))
	validate := func(f ilo.Flavor, info model.JSONObject) error {
		t := taskCtx{node: &model.Node{UUID: "n1", DriverInfo: info}}
		perr := hw.Power(f).Validate(context.Background(), t)
		merr := hw.Management(f).Validate(context.Background(), t)
		Expect(errs.Message(merr)).To(Equal(errs.Message(perr)), "power and management agree")
		return perr
	}
	full := func() model.JSONObject {
		return model.JSONObject{"ilo_address": "192.0.2.1", "ilo_username": "admin", "ilo_password": "pw"}
	}

	It("accepts a complete iLO driver_info without contacting the BMC", func() {
		info := full()
		info["client_port"], info["client_timeout"], info["ilo_verify_ca"] = "8443", float64(30), false
		Expect(validate(hw.ILO(), info)).To(Succeed())
	})

	It("lists the missing iLO parameters as Ironic does", func() {
		err := validate(hw.ILO(), model.JSONObject{"ilo_address": "192.0.2.1"})
		Expect(kindOf(err)).To(Equal(errs.KindMissingParameterValue))
		Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
		Expect(err.Error()).To(Equal("The following required iLO parameters are missing from the node's driver_info: ['ilo_username', 'ilo_password']"))
	})

	DescribeTable("refuses bad optional values",
		func(key string, value any, message string) {
			info := full()
			info[key] = value
			err := validate(hw.ILO(), info)
			Expect(kindOf(err)).To(Equal(errs.KindInvalidParameterValue))
			Expect(err.Error()).To(Equal(message))
		},
		Entry("client_port not a number", "client_port", "https", `client_port "https" is not a valid integer.`),
		Entry("client_port out of range", "client_port", float64(70000), `client_port "70000" is out of range. Valid port numbers must be between 1 and 65535.`),
		Entry("client_timeout not an integer", "client_timeout", "soon", "The following iLO parameters from the node's driver_info should be integers: ['client_timeout']"),
		Entry("ca_file missing", "ca_file", "/nonexistent/ca.pem", `ca_file "/nonexistent/ca.pem" is not found.`),
		Entry("ilo_verify_ca neither Boolean nor file", "ilo_verify_ca", "maybe",
			`Invalid value type set in driver_info/ilo_verify_ca on node n1. The value should be a Boolean or the path to a file/directory, not "maybe"`),
	)

	It("validates Redfish addresses and system ids as Ironic names them", func() {
		err := validate(hw.Redfish(), model.JSONObject{"redfish_address": "bmc.example.com"})
		Expect(kindOf(err)).To(Equal(errs.KindMissingParameterValue))
		Expect(err.Error()).To(Equal("Missing the following Redfish properties in node n1 driver_info: ['redfish_username', 'redfish_password']"))
		ok := model.JSONObject{"redfish_address": "bmc.example.com:8443", "redfish_username": "u", "redfish_password": "p",
			"redfish_system_id": "/redfish/v1/Systems/437XR1138R2", "redfish_verify_ca": "false"}
		Expect(validate(hw.Redfish(), ok)).To(Succeed())
		for k, v := range map[string]string{"redfish_address": "http://bmc.example.com", "redfish_system_id": "/redfish/v1/Systems/"} {
			bad := model.JSONObject{}
			for kk, vv := range ok {
				bad[kk] = vv
			}
			bad[k] = v
			Expect(kindOf(validate(hw.Redfish(), bad))).To(Equal(errs.KindInvalidParameterValue), k)
		}
		ca := filepath.Join(GinkgoT().TempDir(), "ca.pem")
		Expect(os.WriteFile(ca, []byte("x"), 0o600)).To(Succeed())
		ok["redfish_verify_ca"] = ca
		Expect(validate(hw.Redfish(), ok)).To(Succeed())
	})
})

func bootsOf(srv *ilotest.Server) int {
	if srv.Redfish != nil {
		return srv.Redfish.Boots()
	}
	return srv.RIBCL.Boots()
}

var _ driver.TaskContext = taskCtx{}

func itoa(n int) string { return strconv.Itoa(n) }
