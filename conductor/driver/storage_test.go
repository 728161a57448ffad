package driver_test

import (
	"context"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
)

// volumeTask is a node with its volume records, as a task shows them.
type volumeTask struct {
	node       *model.Node
	connectors []model.VolumeConnector
	targets    []model.VolumeTarget
}

func (t *volumeTask) Node() *model.Node                                        { return t.node }
func (t *volumeTask) Ports(context.Context) ([]model.Port, error)              { return nil, nil }
func (t *volumeTask) Shared() bool                                             { return true }
func (t *volumeTask) Driver() (*driver.Driver, error)                          { return nil, errNoConductor }
func (t *volumeTask) ConfigDrive(context.Context) (string, error)              { return "", errNoConductor }
func (t *volumeTask) Save(context.Context) error                               { return errNoConductor }
func (t *volumeTask) ProcessEvent(context.Context, states.Event, string) error { return errNoConductor }
func (t *volumeTask) Fail(context.Context, string) error                       { return errNoConductor }
func (t *volumeTask) VolumeConnectors(context.Context) ([]model.VolumeConnector, error) {
	return t.connectors, nil
}
func (t *volumeTask) VolumeTargets(context.Context) ([]model.VolumeTarget, error) {
	return t.targets, nil
}

var _ = Describe("storage interfaces", func() {
	var t *volumeTask
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

	BeforeEach(func() { t = &volumeTask{node: &model.Node{UUID: "n", Properties: model.JSONObject{}}} })

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
		t.targets = []model.VolumeTarget{target("iscsi", 0)}
		Expect(reason()).To(ContainSubstring("no iqn volume connector"))
		t.connectors = []model.VolumeConnector{connector("iqn")}
		Expect(reason()).To(ContainSubstring("iscsi_boot:true"))
		t.node.Properties["capabilities"] = "boot_mode:uefi,iscsi_boot:True"
		Expect(cinder.Validate(context.Background(), t)).To(Succeed())
	})

	It("needs wwpn and wwnn connectors in pairs for Fibre Channel", func() {
		t.node.Properties["capabilities"] = map[string]any{"fibre_channel_boot": true}
		t.targets = []model.VolumeTarget{target("fibre_channel", 0)}
		t.connectors = []model.VolumeConnector{connector("wwpn")}
		Expect(reason()).To(ContainSubstring("1 wwpn and 0 wwnn"))
		t.connectors = append(t.connectors, connector("wwnn"))
		Expect(cinder.Validate(context.Background(), t)).To(Succeed())
	})

	It("needs a volume_id and a known volume type on every target", func() {
		t.connectors = []model.VolumeConnector{connector("iqn")}
		missing := target("iscsi", 1)
		missing.VolumeID = ""
		t.targets = []model.VolumeTarget{missing}
		Expect(reason()).To(ContainSubstring("has no volume_id"))
		t.targets = []model.VolumeTarget{target("nvme", 1)}
		Expect(reason()).To(ContainSubstring(`volume_type "nvme"`))
	})

	It("leaves external and noop storage unchecked", func() {
		t.targets = []model.VolumeTarget{target("nvme", 0)}
		Expect(driver.External{}.Validate(context.Background(), t)).To(Succeed())
		Expect(driver.NoOp{}.Validate(context.Background(), t)).To(Succeed())
	})
})
