package iscsideploy

import (
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/driver/drivertest"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/model"
)

var _ = Describe("clean steps and their configuration", func() {
	agentNode := func() *model.Node {
		return &model.Node{UUID: "u", DriverInternalInfo: model.JSONObject{
			"agent_url": "http://127.0.0.1:9999",
			"agent_cached_clean_steps": map[string]any{"deploy": []any{
				map[string]any{"interface": "deploy", "step": "erase_devices", "priority": 10, "abortable": true},
				map[string]any{"interface": "deploy", "step": "erase_devices_metadata", "priority": 99, "abortable": true},
			}},
		}}
	}
	priorities := func(d *Deploy, n *model.Node) map[string]int {
		steps, err := d.CleanSteps(context.Background(), drivertest.New(n))
		Expect(err).NotTo(HaveOccurred())
		out := map[string]int{}
		for _, s := range steps {
			out[s.Step] = s.Priority
		}
		return out
	}

	It("honours the deprecated [agent] agent_erase_devices_priority and warns about it", func() {
		cfg := config.Defaults()
		cfg.Agent.AgentEraseDevicesPriority = ptr(5)
		log, hook := logtest.NewNullLogger()
		d := New(OptionsFrom(cfg, log))
		Expect(priorities(d, agentNode())).To(Equal(map[string]int{"erase_devices": 5, "erase_devices_metadata": 99}))
		Expect(hook.AllEntries()).To(ContainElement(And(
			HaveField("Level", logrus.WarnLevel),
			HaveField("Message", ContainSubstring("[agent] agent_erase_devices_priority is deprecated")))))

		By("letting [deploy] erase_devices_priority win, without a warning")
		cfg.Deploy.EraseDevicesPriority = ptr(0)
		cfg.Deploy.EraseDevicesMetadataPriority = ptr(50)
		hook.Reset()
		d = New(OptionsFrom(cfg, log))
		Expect(priorities(d, agentNode())).To(Equal(map[string]int{"erase_devices": 0, "erase_devices_metadata": 50}))
		Expect(hook.AllEntries()).To(BeEmpty())
	})

	It("offers the agent's steps only once it ran, and the conductor's erase steps with the callback-only ramdisk's target", func() {
		d := New(OptionsFrom(config.Defaults(), logrus.New()))
		Expect(priorities(d, &model.Node{UUID: "u", DriverInternalInfo: model.JSONObject{}})).To(BeEmpty())
		_, err := d.CleanSteps(context.Background(), drivertest.New(&model.Node{UUID: "u",
			DriverInternalInfo: model.JSONObject{"agent_url": "http://127.0.0.1:9999"}}))
		Expect(err).To(MatchError("Cleaning steps are not yet available for node u"))
		Expect(priorities(d, agentNode())).To(Equal(map[string]int{"erase_devices": 10, "erase_devices_metadata": 99}))

		n := &model.Node{UUID: "u", DriverInternalInfo: model.JSONObject{}}
		storeCleaningTarget(n, target{address: "127.0.0.1", port: 3260, iqn: IQN("u"), lun: 1})
		steps, err := d.CleanSteps(context.Background(), drivertest.New(n))
		Expect(err).NotTo(HaveOccurred())
		Expect(steps).To(ConsistOf(
			driver.CleanStep{Interface: "deploy", Step: "erase_devices_metadata", Priority: 99},
			driver.CleanStep{Interface: "deploy", Step: "erase_devices", Priority: 10}))
	})
})

var _ = Describe("[iscsi] allow_export_without_chap", func() {
	It("is off by default and reaches the deploy interface when a configuration file sets it", func() {
		Expect(OptionsFrom(config.Defaults(), logrus.New()).AllowExportWithoutCHAP).To(BeFalse())
		path := filepath.Join(GinkgoT().TempDir(), "ferric.conf")
		Expect(os.WriteFile(path, []byte("[iscsi]\nallow_export_without_chap = true\n"), 0o600)).To(Succeed())
		cfg, err := config.Load(path, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(OptionsFrom(cfg, logrus.New()).AllowExportWithoutCHAP).To(BeTrue())
	})
})
