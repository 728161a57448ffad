package keystone_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/ports"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/harness"
	"github.com/ferricbm/ferric/tests/lab"
	"github.com/ferricbm/ferric/tests/lab/bmc"
)

// labDeployTimeout bounds one deploy on a loaded machine: the ramdisk's
// boot, lookup and heartbeats, the image write over loopback iSCSI and the
// reboot.
const labDeployTimeout = 5 * time.Minute

// The ramdisk holds no Keystone token, so a node reaching active through
// ferric-agent's heartbeats shows the ramdisk endpoints are open while
// every client call needs a token.
var _ = Describe("Under Keystone auth, the agent path", Ordered, func() {
	var (
		suite  *steps.LabSuite
		api    *harness.Deployment
		theLab *lab.Lab
		image  steps.DiskImage
	)

	BeforeAll(func(ctx SpecContext) {
		suite = steps.NewLabSuite(ctx, "keystone")
		httpPort, err := lab.FreeTCPPort()
		Expect(err).NotTo(HaveOccurred())
		timings := harness.FastTimings
		timings.CallbackTimeout = 90 * time.Second
		base := withKeystone(suite.Config(timings, httpPort))
		// Cleaning through the ramdisk is the clean suite's; here the
		// deploy's lookup and heartbeats are the point.
		base.Set("conductor", "automated_clean", false)
		api = suite.StartAPI(ctx, base)
		api.ConductorReady = func(ctx context.Context, host string) error { return listsHost(ctx, api.APIURL, host) }
		_, err = api.StartConductor(ctx, "conductor")
		Expect(err).NotTo(HaveOccurred())
		theLab = suite.StartLab(ctx, 1, 1<<30)

		image = steps.NewDiskImage(suite.WorkDir, "whole", 4<<20)
	}, NodeTimeout(harness.ReadyTimeout*4))

	AfterEach(func() { steps.ReportLabLogsIfFailed(api, theLab) })

	It("deploys a lab node to active for a member's token, the ramdisk calling back without one", func(ctx SpecContext) {
		node := theLab.Nodes[0]
		node.SetMode(lab.ModeAuto)
		admins, members := clientOf(ctx, api.APIURL, admin), clientOf(ctx, api.APIURL, member)

		r, err := harness.Do(ctx, http.MethodGet, api.APIURL+"/v1/nodes", nil, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Status).To(Equal(http.StatusUnauthorized), "this API checks tokens")

		n, err := nodes.Create(ctx, admins, nodes.CreateOpts{
			Name: "ks-lab-" + harness.RandomHex(3), Driver: "ipmi",
			DriverInfo: node.DriverInfo("file://"+suite.DeployKernel, "file://"+suite.DeployRamdisk),
			Properties: map[string]any{"cpus": 1, "memory_mb": 1024, "local_gb": 1},
		}).Extract()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_, err := nodes.Update(ctx, admins, n.UUID, nodes.UpdateOpts{
				nodes.UpdateOperation{Op: nodes.ReplaceOp, Path: "/maintenance", Value: true}}).Extract()
			Expect(err).NotTo(HaveOccurred())
			Expect(nodes.Delete(ctx, admins, n.UUID).ExtractErr()).To(Succeed())
		}, NodeTimeout(30*time.Second))
		_, err = ports.Create(ctx, admins, ports.CreateOpts{NodeUUID: n.UUID, Address: node.MAC}).Extract()
		Expect(err).NotTo(HaveOccurred())

		steps.Provision(ctx, members, n.UUID, nodes.TargetManage)
		steps.EventuallyRests(ctx, members, n.UUID, "manageable", labDeployTimeout)
		steps.Provision(ctx, members, n.UUID, nodes.TargetProvide)
		steps.EventuallyRests(ctx, members, n.UUID, "available", labDeployTimeout)
		_, err = nodes.Update(ctx, members, n.UUID, nodes.UpdateOpts{
			nodes.UpdateOperation{Op: nodes.AddOp, Path: "/instance_info/image_source", Value: suite.ImageURL + "/whole.qcow2"},
			nodes.UpdateOperation{Op: nodes.AddOp, Path: "/instance_info/image_checksum", Value: image.MD5},
		}).Extract()
		Expect(err).NotTo(HaveOccurred())

		By("deploying: ferric-agent looks the node up and heartbeats with no token")
		steps.Provision(ctx, members, n.UUID, nodes.TargetActive)
		got := steps.EventuallyRests(ctx, members, n.UUID, "active", labDeployTimeout)
		Expect(got.LastError).To(BeEmpty())
		Expect(got.PowerState).To(Equal("power on"))
		agent := slices.DeleteFunc(node.Boots(), func(b lab.Boot) bool { return !b.Agent })
		Expect(agent).To(HaveLen(1), "one deploy ramdisk boot")
		Expect(agent[0].Cmdline).To(ContainSubstring("ipa-api-url=" + api.APIURL))
		logs, err := os.ReadFile(filepath.Join(api.Dir, "api.log"))
		Expect(err).NotTo(HaveOccurred())
		Expect(answered(string(logs), "/v1/lookup", 200)).To(BeTrue(), "the ramdisk's lookup, without a token")
		Expect(answered(string(logs), "/v1/heartbeat/"+n.UUID, 202)).To(BeTrue(), "the ramdisk's heartbeats, without a token")
		Expect(steps.DiskStartsWith(node.Disk, image.Raw)).To(BeTrue(), "the disk holds the image")
		steps.EventuallyBooted(node, lab.BootDisk)

		By("undeploying with the member's token")
		steps.Provision(ctx, members, n.UUID, nodes.TargetDeleted)
		got = steps.EventuallyRests(ctx, members, n.UUID, "available", labDeployTimeout)
		Expect(got.PowerState).To(Equal("power off"))
		Expect(node.BMC.PowerState()).To(Equal(bmc.PowerOff))
	}, SpecTimeout(labDeployTimeout+3*time.Minute))
})

// listsHost checks, with an admin's token, that GET /v1/drivers lists the
// conductor host: the harness's own readiness check sends no token.
func listsHost(ctx context.Context, url, host string) error {
	tok, err := keystone.Issue(ctx, admin, true)
	if err != nil {
		return err
	}
	r, err := harness.Do(ctx, http.MethodGet, url+"/v1/drivers", nil, map[string]string{"X-Auth-Token": tok})
	if err != nil {
		return err
	}
	var doc struct {
		Drivers []struct {
			Hosts []string `json:"hosts"`
		} `json:"drivers"`
	}
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		return fmt.Errorf("GET /v1/drivers answered %d: %w", r.Status, err)
	}
	for _, d := range doc.Drivers {
		if slices.Contains(d.Hosts, host) {
			return nil
		}
	}
	return fmt.Errorf("GET /v1/drivers does not list %s yet", host)
}

// answered tells whether the API's access log holds a request to a path
// starting with path answered with status.
func answered(log, path string, status int) bool {
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "path="+path) && strings.Contains(line, "status="+strconv.Itoa(status)) {
			return true
		}
	}
	return false
}
