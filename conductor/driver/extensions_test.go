package driver_test

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/driver/drivertest"
	"github.com/ferricbm/ferric/conductor/driver/fake"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/model"
)

type describing struct{ driver.NoOp }

func (describing) Properties() map[string]string {
	return map[string]string{"bmc_address": "where the BMC listens"}
}

func decode(s string) map[string]any {
	var m map[string]any
	Expect(json.Unmarshal([]byte(s), &m)).To(Succeed())
	return m
}

var _ = Describe("RAID configuration validation", func() {
	DescribeTable("accepts valid target configurations",
		func(doc string) { Expect(driver.ValidateRAIDConfig(decode(doc))).To(Succeed()) },
		Entry("empty clears the target", `{}`),
		Entry("one mirrored root volume", `{"logical_disks": [{"raid_level": "1", "size_gb": 100, "is_root_volume": true}]}`),
		Entry("all optional keys", `{"logical_disks": [{"raid_level": "5", "size_gb": "MAX", "volume_name": "data", "share_physical_disks": false,
			"disk_type": "ssd", "interface_type": "sas", "number_of_physical_disks": 3, "controller": "RAID.Integrated.1-1",
			"physical_disks": ["Disk.Bay.0", "Disk.Bay.1", "Disk.Bay.2"]}]}`),
	)
	DescribeTable("refuses invalid ones with 400 naming the problem",
		func(doc, problem string) {
			err := driver.ValidateRAIDConfig(decode(doc))
			Expect(errs.KindOf(err)).To(Equal(errs.KindInvalidParameterValue))
			Expect(err.Error()).To(ContainSubstring(problem))
		},
		Entry("unknown top-level key", `{"logical_disks": [], "extra": 1}`, "'extra' was unexpected"),
		Entry("no disks", `{"logical_disks": []}`, "at least one"),
		Entry("disks not a list", `{"logical_disks": {}}`, "must be a list"),
		Entry("missing size", `{"logical_disks": [{"raid_level": "1"}]}`, "'size_gb' is a required property"),
		Entry("unknown level", `{"logical_disks": [{"raid_level": "7", "size_gb": 1}]}`, "raid_level \"7\""),
		Entry("fractional size", `{"logical_disks": [{"raid_level": "0", "size_gb": 1.5}]}`, "size_gb"),
		Entry("negative size", `{"logical_disks": [{"raid_level": "0", "size_gb": -1}]}`, "size_gb"),
		Entry("size word", `{"logical_disks": [{"raid_level": "0", "size_gb": "ALL"}]}`, "size_gb"),
		Entry("bad disk type", `{"logical_disks": [{"raid_level": "0", "size_gb": 1, "disk_type": "nvme"}]}`, "disk_type"),
		Entry("zero disks", `{"logical_disks": [{"raid_level": "0", "size_gb": 1, "number_of_physical_disks": 0}]}`, "number_of_physical_disks"),
		Entry("unknown disk key", `{"logical_disks": [{"raid_level": "0", "size_gb": 1, "speed": "fast"}]}`, "'speed' was unexpected"),
		Entry("two root volumes", `{"logical_disks": [{"raid_level": "1", "size_gb": 1, "is_root_volume": true},
			{"raid_level": "1", "size_gb": 1, "is_root_volume": true}]}`, "only one logical disk can be the root volume"),
	)
	It("describes every logical disk key it accepts", func() {
		props := driver.LogicalDiskProperties()
		for _, k := range []string{"raid_level", "size_gb", "volume_name", "is_root_volume", "share_physical_disks",
			"disk_type", "interface_type", "number_of_physical_disks", "controller", "physical_disks"} {
			Expect(props).To(HaveKey(k))
		}
		props["raid_level"] = "changed"
		Expect(driver.LogicalDiskProperties()["raid_level"]).NotTo(Equal("changed"), "callers get a copy")
	})
})

var _ = Describe("Registry properties and default interfaces", func() {
	It("merges the properties of the default interfaces", func() {
		ht := fake.New().HardwareType()
		ht.Name = "described"
		ht.Interfaces[hwcatalog.Bios] = []driver.Implementation{{Name: "described", Impl: describing{}}}
		reg, err := driver.NewRegistry([]string{"described"}, ht)
		Expect(err).NotTo(HaveOccurred())
		props, err := reg.Properties("described")
		Expect(err).NotTo(HaveOccurred())
		Expect(props).To(HaveKeyWithValue("bmc_address", "where the BMC listens"))
		Expect(props).To(HaveKey("fake_latency"), "and the fake power interface's")
		Expect(props).To(HaveLen(4))
		_, err = reg.Properties("ipmi")
		Expect(errs.KindOf(err)).To(Equal(errs.KindDriverNotFound))
		impl, err := reg.DefaultInterface("described", hwcatalog.RAID)
		Expect(err).NotTo(HaveOccurred())
		_, isRAID := impl.(driver.RAIDInterface)
		Expect(isRAID).To(BeTrue(), "fake RAID is fake-hardware's default")
	})
})

var _ = Describe("network interfaces", func() {
	var n *model.Node
	BeforeEach(func() { n = &model.Node{UUID: "n1", Driver: fake.Name} })

	It("flat binds VIFs to free ports, PXE-enabled first, and unbinds them", func(ctx SpecContext) {
		t := drivertest.New(n)
		t.PortList = []model.Port{
			{UUID: "p1", PXEEnabled: false},
			{UUID: "p2", PXEEnabled: true, InternalInfo: model.JSONObject{}},
			{UUID: "p3", PXEEnabled: true, Extra: model.JSONObject{"vif_port_id": "legacy"}},
		}
		flat := driver.FlatNetwork{}
		Expect(flat.VIFAttach(ctx, t, driver.VIF{ID: "v1"})).To(Succeed())
		Expect(t.PortList[1].InternalInfo).To(HaveKeyWithValue("tenant_vif_port_id", "v1"))
		Expect(errs.KindOf(flat.VIFAttach(ctx, t, driver.VIF{ID: "legacy"}))).To(Equal(errs.KindConflict))
		Expect(flat.VIFAttach(ctx, t, driver.VIF{ID: "v2"})).To(Succeed())
		Expect(t.PortList[0].InternalInfo).To(HaveKeyWithValue("tenant_vif_port_id", "v2"))
		Expect(errs.KindOf(flat.VIFAttach(ctx, t, driver.VIF{ID: "v3"}))).To(Equal(errs.KindInvalid))
		vifs, err := flat.VIFList(ctx, t)
		Expect(err).NotTo(HaveOccurred())
		Expect(vifs).To(ConsistOf(driver.VIF{ID: "v1"}, driver.VIF{ID: "v2"}, driver.VIF{ID: "legacy"}))
		Expect(flat.VIFDetach(ctx, t, "legacy")).To(Succeed())
		Expect(t.PortList[2].Extra).NotTo(HaveKey("vif_port_id"))
		Expect(errs.KindOf(flat.VIFDetach(ctx, t, "legacy"))).To(Equal(errs.KindInvalid))
		Expect(t.SavedPorts).To(HaveLen(3))
	})

	It("noop accepts attach and detach and binds nothing", func(ctx SpecContext) {
		t := drivertest.New(n)
		t.PortList = []model.Port{{UUID: "p1"}}
		noop := driver.NoopNetwork{}
		Expect(noop.VIFAttach(ctx, t, driver.VIF{ID: "v"})).To(Succeed())
		vifs, err := noop.VIFList(ctx, t)
		Expect(err).NotTo(HaveOccurred())
		Expect(vifs).To(BeEmpty())
		Expect(noop.VIFDetach(ctx, t, "v")).To(Succeed())
		Expect(t.SavedPorts).To(BeEmpty())
		Expect(t.PortList[0].InternalInfo).To(BeEmpty())
	})
})
