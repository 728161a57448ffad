package driver_test

import (
	"context"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/driver/drivertest"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

var _ = Describe("storage interfaces", func() {
	var t *drivertest.Task
	cinder := driver.Cinder{}
	connector := func(typ string) model.VolumeConnector {
		return model.VolumeConnector{Type: typ, ConnectorID: typ + "-id"}
	}
	target := func(typ string, idx int) model.VolumeTarget {
		return model.VolumeTarget{UUID: "t", VolumeType: typ, BootIndex: idx, VolumeID: "v"}
	}
	reason := func() string {
		GinkgoHelper()
		err := cinder.Validate(context.Background(), t)
		Expect(err).To(HaveOccurred())
		Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
		return errs.Message(err)
	}

	BeforeEach(func() { t = drivertest.New(&model.Node{UUID: "n", Properties: model.JSONObject{}}) })

	It("offers noop (the default), cinder and external", func() {
		var names []string
		for _, impl := range driver.StorageImplementations() {
			names = append(names, impl.Name)
		}
		Expect(names).To(Equal([]string{"noop", "cinder", "external"}))
	})

	It("accepts a node without volumes", func() {
		Expect(cinder.Validate(context.Background(), t)).To(Succeed())
	})

	It("needs an iqn connector for iSCSI and the iscsi_boot capability to boot from it", func() {
		t.Targets = []model.VolumeTarget{target("iscsi", 0)}
		Expect(reason()).To(ContainSubstring("no iqn volume connector"))
		t.Connectors = []model.VolumeConnector{connector("iqn")}
		Expect(reason()).To(ContainSubstring("iscsi_boot:true"))
		t.Node().Properties["capabilities"] = "boot_mode:uefi,iscsi_boot:True"
		Expect(cinder.Validate(context.Background(), t)).To(Succeed())
	})

	It("needs wwpn and wwnn connectors in pairs for Fibre Channel", func() {
		t.Node().Properties["capabilities"] = map[string]any{"fibre_channel_boot": true}
		t.Targets = []model.VolumeTarget{target("fibre_channel", 0)}
		t.Connectors = []model.VolumeConnector{connector("wwpn")}
		Expect(reason()).To(ContainSubstring("1 wwpn and 0 wwnn"))
		t.Connectors = append(t.Connectors, connector("wwnn"))
		Expect(cinder.Validate(context.Background(), t)).To(Succeed())
	})

	It("needs a volume_id and a known volume type on every target", func() {
		t.Connectors = []model.VolumeConnector{connector("iqn")}
		missing := target("iscsi", 1)
		missing.VolumeID = ""
		t.Targets = []model.VolumeTarget{missing}
		Expect(reason()).To(ContainSubstring("has no volume_id"))
		t.Targets = []model.VolumeTarget{target("nvme", 1)}
		Expect(reason()).To(ContainSubstring(`volume_type "nvme"`))
	})

	It("leaves external and noop storage unchecked", func() {
		t.Targets = []model.VolumeTarget{target("nvme", 0)}
		Expect(driver.External{}.Validate(context.Background(), t)).To(Succeed())
		Expect(driver.NoOp{}.Validate(context.Background(), t)).To(Succeed())
	})
})
