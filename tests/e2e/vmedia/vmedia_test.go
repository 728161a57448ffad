package vmedia_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/ports"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/vmedia/publish"
	"github.com/ferricbm/ferric/deploy/image"
	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/lab"
)

// deployTimeout bounds a deploy: media inserted, the ramdisk booted from
// them, a small image written over loopback iSCSI, the reboot.
const deployTimeout = 3 * time.Minute

var _ = Describe("Deploying lab nodes by virtual media", Ordered, func() {
	var whole steps.DiskImage

	BeforeAll(func() { whole = steps.NewDiskImage(workDir, "whole", 8<<20) })

	// deployWholeDisk deploys the whole-disk image onto the nodes at once
	// and checks what a user would: active, the image on the disk, the
	// node started from it; the ramdisk came from the deploy ISO with the
	// floppy, and both are ejected and unpublished.
	deployWholeDisk := func(ctx context.Context, group string, all ...*lab.Node) []string {
		GinkgoHelper()
		var uuids []string
		for _, node := range all {
			uuid := enrol(ctx, node, group)
			steps.SetInstanceInfo(ctx, client, uuid, map[string]any{"image_source": imageURL + "/whole.qcow2", "image_checksum": whole.MD5})
			uuids = append(uuids, uuid)
		}
		for _, uuid := range uuids {
			steps.Provision(ctx, client, uuid, nodes.TargetActive)
		}
		for i, node := range all {
			steps.EventuallyActive(ctx, client, uuids[i], deployTimeout)
			Expect(steps.DiskStartsWith(node.Disk, whole.CheckRaw)).To(BeTrue(), "%s's disk starts with the image's raw bytes", node.Name)
			steps.EventuallyBooted(node, lab.BootDisk)
			deploy := expectDeployBoot(node)
			expectUnpublished(ctx, group, uuids[i], deploy.Floppy)
			Expect(node.InsertedMedia()).To(BeEmpty(), "both drives are empty again")
		}
		return uuids
	}

	It("deploys two iLO 4 nodes at once, media in Swift, and unpublishes each floppy", func(ctx SpecContext) {
		nodesOf := iloLab.Nodes[:2]
		uuids := deployWholeDisk(ctx, groupSwift, nodesOf...)
		for i, node := range nodesOf {
			undeploy(ctx, node, uuids[i])
		}
	}, SpecTimeout(deployTimeout+2*time.Minute))

	It("deploys an iLO 4 node enrolled with ferricctl, the media on the conductor's web server, no Swift", func(ctx SpecContext) {
		node := iloLab.Nodes[2]
		args := []string{"node", "create", "--driver", node.Driver(), "--name", steps.Name(node.Name+"-cli", 0),
			"--conductor-group", groupWeb, "-f", "value", "-c", "uuid"}
		for k, v := range node.VMediaDriverInfo(deployISO) {
			args = append(args, "--driver-info", fmt.Sprintf("%s=%v", k, v))
		}
		uuid := strings.TrimSpace(ferricctl.Run(ctx, args...))
		deleteAfter(uuid)
		ferricctl.Run(ctx, "port", "create", node.MAC, "--node", uuid)
		ferricctl.Run(ctx, "node", "manage", uuid)
		steps.EventuallyRests(ctx, client, uuid, "manageable", deployTimeout)
		ferricctl.Run(ctx, "node", "provide", uuid)
		steps.EventuallyRests(ctx, client, uuid, "available", deployTimeout)
		ferricctl.Run(ctx, "node", "set", uuid, "--instance-info", "image_source="+imageURL+"/whole.qcow2",
			"--instance-info", "image_checksum="+whole.MD5)
		ferricctl.Run(ctx, "node", "deploy", uuid)

		steps.EventuallyActive(ctx, client, uuid, deployTimeout)
		Expect(steps.DiskStartsWith(node.Disk, whole.CheckRaw)).To(BeTrue(), "the disk starts with the image's raw bytes")
		steps.EventuallyBooted(node, lab.BootDisk)
		deploy := expectDeployBoot(node)
		Expect(deploy.Floppy).To(HavePrefix("http://127.0.0.1:"), "the floppy is on the conductor's boot file server")
		expectUnpublished(ctx, groupWeb, uuid, deploy.Floppy)
		Expect(node.InsertedMedia()).To(BeEmpty())
		ferricctl.Run(ctx, "node", "undeploy", uuid)
		n := steps.EventuallyRests(ctx, client, uuid, "available", deployTimeout)
		Expect(n.PowerState).To(Equal("power off"))
	}, SpecTimeout(deployTimeout+time.Minute))

	It("deploys a whole-disk image onto an iLO 5 node through Redfish", func(ctx SpecContext) {
		node := redfishLab.Nodes[0]
		uuids := deployWholeDisk(ctx, groupSwift, node)
		undeploy(ctx, node, uuids[0])
	}, SpecTimeout(deployTimeout+time.Minute))

	It("cleans an iLO node through the ramdisk booted by virtual media, erasing its disk", func(ctx SpecContext) {
		node := iloLab.Nodes[2]
		// A small disk, so the erase takes a moment.
		Expect(os.Truncate(node.Disk, 0)).To(Succeed())
		Expect(os.Truncate(node.Disk, 32<<20)).To(Succeed())
		tenantData(node)
		uuid := enrol(ctx, node, groupWeb)
		steps.Provision(ctx, client, uuid, nodes.TargetManage)
		steps.EventuallyRests(ctx, client, uuid, "manageable", deployTimeout)
		Expect(nodes.ChangeProvisionState(ctx, client, uuid, nodes.ProvisionStateOpts{Target: nodes.TargetClean,
			CleanSteps: []nodes.CleanStep{{Interface: nodes.InterfaceDeploy, Step: "erase_devices"}}}).ExtractErr()).To(Succeed())
		n := steps.EventuallyRests(ctx, client, uuid, "manageable", deployTimeout)
		Expect(n.LastError).To(BeEmpty())
		Expect(n.PowerState).To(Equal("power off"))

		Expect(steps.Zeroed(node.Disk)).To(BeTrue(), "every byte of the disk is zero")
		var names []string
		list, _ := n.DriverInternalInfo["erase_record"].([]any)
		for _, e := range list {
			names = append(names, e.(map[string]any)["step"].(string))
		}
		Expect(names).To(Equal([]string{"erase_devices"}), "the erase record names the step")
		deploy := expectDeployBoot(node)
		Expect(deploy.Floppy).NotTo(BeEmpty())
		Expect(node.InsertedMedia()).To(BeEmpty())
	}, SpecTimeout(deployTimeout))

	// failure is a way a deploy fails before the ramdisk boots. breakNode
	// breaks the lab node or its enrolled node; what it changes on the
	// lab's side it restores after the spec.
	type failure struct {
		// node picks the lab node: the labs start in BeforeSuite.
		node      func() *lab.Node
		group     string
		breakNode func(ctx SpecContext, node *lab.Node, uuid string)
		lastError []string
	}
	const wrongPassword = "not-the-one-in-driver-info"
	DescribeTable("fails the deploy with a clear last_error, nothing attached, published or cached",
		func(ctx SpecContext, f failure) {
			node := f.node()
			uuid := enrol(ctx, node, f.group)
			steps.SetInstanceInfo(ctx, client, uuid, map[string]any{"image_source": imageURL + "/whole.qcow2", "image_checksum": whole.MD5})
			f.breakNode(ctx, node, uuid)
			boots := len(node.Boots())

			steps.Provision(ctx, client, uuid, nodes.TargetActive)
			n := steps.EventuallyUnlockedIn(ctx, client, uuid, "deploy failed", deployTimeout)
			GinkgoWriter.Printf("last_error: %s\n", n.LastError)
			for _, want := range f.lastError {
				Expect(n.LastError).To(ContainSubstring(want))
			}
			Expect(n.LastError).NotTo(Or(ContainSubstring(node.ILO.Password), ContainSubstring(wrongPassword)), "no password in last_error")
			Expect(n.LastError).NotTo(ContainSubstring("temp_url_sig"), "no temporary URL in last_error")
			Expect(n.DriverInternalInfo).NotTo(HaveKey("deploy_key_secret"))

			Expect(node.InsertedMedia()).To(BeEmpty(), "nothing attached")
			Expect(node.AgentRunning()).To(BeFalse(), "no ramdisk runs")
			Expect(node.Boots()).To(HaveLen(boots), "the node did not boot")
			Expect(swiftObjects(ctx, publish.FloppyName(uuid))).To(BeEmpty(), "no floppy of the node in Swift")
			Expect(swiftObjectStatus(ctx, "deploy-"+uuid)).To(Equal(http.StatusNotFound), "no deploy ISO of the node in Swift")
			for _, group := range []string{groupSwift, groupWeb} {
				left, err := filepath.Glob(filepath.Join(workDir, group+"-httpboot", "*", "*"+uuid+"*"))
				Expect(err).NotTo(HaveOccurred())
				Expect(left).To(BeEmpty(), "nothing on the %s group's boot file server", group)
			}
			_, err := os.Lstat(image.RefPath(filepath.Join(workDir, f.group+"-images"), uuid))
			Expect(err).To(MatchError(os.ErrNotExist), "no image cached for the node")
		},
		Entry("a deploy ISO URL that answers 404", failure{node: func() *lab.Node { return iloLab.Nodes[0] }, group: groupSwift,
			breakNode: func(ctx SpecContext, _ *lab.Node, uuid string) {
				setDriverInfo(ctx, uuid, "deploy_iso", imageURL+"/missing.iso")
			},
			lastError: []string{"insert the deploy ISO", "Virtual Media"}}, SpecTimeout(deployTimeout)),
		Entry("a wrong BMC password", failure{node: func() *lab.Node { return redfishLab.Nodes[0] }, group: groupSwift,
			breakNode: func(_ SpecContext, node *lab.Node, _ string) {
				node.ILO.Redfish.SetPassword(wrongPassword)
				DeferCleanup(node.ILO.Redfish.SetPassword, node.ILO.Password)
			},
			lastError: []string{"password"}}, SpecTimeout(deployTimeout)),
		Entry("virtual media refused by the iLO", failure{node: func() *lab.Node { return iloLab.Nodes[1] }, group: groupWeb,
			breakNode: func(_ SpecContext, node *lab.Node, _ string) {
				node.ILO.RIBCL.RefuseVirtualMedia(true)
				DeferCleanup(node.ILO.RIBCL.RefuseVirtualMedia, false)
			},
			lastError: []string{"insert the parameter floppy", "An invalid Virtual Media option has been given"}}, SpecTimeout(deployTimeout)),
		Entry("Swift down", failure{node: func() *lab.Node { return iloLab.Nodes[2] }, group: groupSwift,
			breakNode: func(_ SpecContext, _ *lab.Node, _ string) {
				Expect(swiftProxy.Down()).To(Succeed())
				DeferCleanup(swiftProxy.Up)
			},
			lastError: []string{"Swift", "connection refused"}}, SpecTimeout(deployTimeout)),
		Entry("the iLO unreachable", failure{node: func() *lab.Node { return iloLab.Nodes[0] }, group: groupWeb,
			breakNode: func(ctx SpecContext, _ *lab.Node, uuid string) {
				closed, err := lab.FreeTCPPort()
				Expect(err).NotTo(HaveOccurred())
				setDriverInfo(ctx, uuid, "client_port", closed)
			},
			lastError: []string{"ilo BMC", "connection refused"}}, SpecTimeout(deployTimeout)),
		Entry("a Redfish task that ends in Exception", failure{node: func() *lab.Node { return redfishLab.Nodes[0] }, group: groupSwift,
			breakNode: func(_ SpecContext, node *lab.Node, _ string) {
				node.ILO.Redfish.FailMediaTasks("Unable to mount the virtual media image.")
				DeferCleanup(node.ILO.Redfish.FailMediaTasks, "")
			},
			lastError: []string{"insert the parameter floppy", "task ended in state Exception", "Unable to mount the virtual media image."}},
			SpecTimeout(deployTimeout)),
	)

	It("deploys one partition image onto two iLO 4 nodes, each booting it from a boot ISO, also after a reboot", func(ctx SpecContext) {
		By("building an ext4 root filesystem image")
		rootRaw := filepath.Join(workDir, "root.raw")
		Expect(os.WriteFile(rootRaw, nil, 0o644)).To(Succeed())
		Expect(os.Truncate(rootRaw, 32<<20)).To(Succeed())
		steps.Run("mkfs.ext4", "-q", "-F", "-L", "lab-root", rootRaw)
		part := filepath.Join(workDir, "served", "root.qcow2")
		steps.Run("qemu-img", "convert", "-f", "raw", "-O", "qcow2", rootRaw, part)
		// The lab never runs the instance kernel: a placeholder does.
		kernel := filepath.Join(workDir, "served", "instance.kernel")
		Expect(os.WriteFile(kernel, []byte("placeholder: the lab checks root= only"), 0o644)).To(Succeed())

		nodesOf := iloLab.Nodes[:2]
		var uuids []string
		for _, node := range nodesOf {
			uuid := enrol(ctx, node, groupSwift)
			steps.SetInstanceInfo(ctx, client, uuid, map[string]any{"image_source": imageURL + "/root.qcow2", "image_checksum": steps.MD5File(part),
				"kernel": imageURL + "/" + filepath.Base(kernel), "ramdisk": imageURL + "/" + filepath.Base(kernel), "root_gb": 1,
				"capabilities": map[string]any{"boot_option": "netboot"}})
			uuids = append(uuids, uuid)
		}
		for _, uuid := range uuids {
			steps.Provision(ctx, client, uuid, nodes.TargetActive)
		}
		for i, node := range nodesOf {
			steps.EventuallyActive(ctx, client, uuids[i], deployTimeout)
			expectBootedISO(node)
		}

		By("both nodes boot one shared ISO, published once")
		var isoRefs []string
		for _, uuid := range uuids {
			n, err := nodes.Get(ctx, client, uuid).Extract()
			Expect(err).NotTo(HaveOccurred())
			ref, _ := n.InstanceInfo["ilo_boot_iso"].(string)
			isoRefs = append(isoRefs, ref)
		}
		Expect(isoRefs[0]).To(HavePrefix("published:"))
		Expect(isoRefs[1]).To(Equal(isoRefs[0]), "the same image, kernel and ramdisk share one boot ISO")
		sharedISO := strings.TrimPrefix(isoRefs[0], "published:")
		Expect(swiftObjectStatus(ctx, sharedISO)).To(Equal(http.StatusOK))
		Expect(store.BootISOUsage(ctx, sharedISO)).To(Equal(2), "usage_count: both nodes")

		By("rebooting the first node: its boot ISO is attached again")
		boots := len(nodesOf[0].Boots())
		Expect(nodes.ChangePowerState(ctx, client, uuids[0], nodes.PowerStateOpts{Target: nodes.Rebooting}).ExtractErr()).To(Succeed())
		Eventually(func() int { return len(nodesOf[0].Boots()) }).WithTimeout(time.Minute).Should(BeNumerically(">", boots))
		expectBootedISO(nodesOf[0])

		undeploy(ctx, nodesOf[0], uuids[0])
		Expect(swiftObjectStatus(ctx, sharedISO)).To(Equal(http.StatusOK), "the second node still boots it")
		Expect(store.BootISOUsage(ctx, sharedISO)).To(Equal(1))
		undeploy(ctx, nodesOf[1], uuids[1])
		Expect(swiftObjectStatus(ctx, sharedISO)).To(Equal(http.StatusNotFound), "deleted with its last user")
	}, SpecTimeout(deployTimeout+2*time.Minute))
})

// enrol creates a node of the lab node's hardware type in the conductor
// group, with a port for its MAC, and brings it to available.
func enrol(ctx context.Context, node *lab.Node, group string) string {
	GinkgoHelper()
	n, err := nodes.Create(ctx, client, nodes.CreateOpts{
		Name:           steps.Name(node.Name+"-"+group, len(node.Boots())),
		Driver:         node.Driver(),
		ConductorGroup: group,
		DriverInfo:     node.VMediaDriverInfo(deployISO),
		Properties:     map[string]any{"cpus": 1, "memory_mb": 1024, "local_gb": 1},
	}).Extract()
	Expect(err).NotTo(HaveOccurred())
	Expect(n.BootInterface).To(HaveSuffix("-virtual-media"))
	deleteAfter(n.UUID)
	_, err = ports.Create(ctx, client, ports.CreateOpts{NodeUUID: n.UUID, Address: node.MAC}).Extract()
	Expect(err).NotTo(HaveOccurred())
	steps.Provision(ctx, client, n.UUID, nodes.TargetManage)
	steps.EventuallyRests(ctx, client, n.UUID, "manageable", deployTimeout)
	steps.Provision(ctx, client, n.UUID, nodes.TargetProvide)
	steps.EventuallyRests(ctx, client, n.UUID, "available", deployTimeout)
	return n.UUID
}

// setDriverInfo sets one key of the node's driver_info.
func setDriverInfo(ctx context.Context, uuid, key string, value any) {
	GinkgoHelper()
	_, err := nodes.Update(ctx, client, uuid, nodes.UpdateOpts{nodes.UpdateOperation{Op: nodes.AddOp,
		Path: "/driver_info/" + key, Value: value}}).Extract()
	Expect(err).NotTo(HaveOccurred())
}

// deleteAfter deletes the node after the spec, in maintenance if it is
// busy.
func deleteAfter(uuid string) {
	DeferCleanup(func(ctx SpecContext) {
		cur, err := nodes.Get(ctx, client, uuid).Extract()
		Expect(err).NotTo(HaveOccurred())
		if !slices.Contains([]string{"available", "enroll", "manageable"}, cur.ProvisionState) {
			_, err = nodes.Update(ctx, client, uuid, nodes.UpdateOpts{
				nodes.UpdateOperation{Op: nodes.ReplaceOp, Path: "/maintenance", Value: true}}).Extract()
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(nodes.Delete(ctx, client, uuid).ExtractErr()).To(Succeed())
	}, NodeTimeout(30*time.Second))
}

// expectDeployBoot checks the node's last ramdisk boot came from the
// deploy ISO in the virtual CD, with the parameters of the floppy, and
// returns it.
func expectDeployBoot(node *lab.Node) lab.Boot {
	GinkgoHelper()
	var deploys []lab.Boot
	for _, b := range node.Boots() {
		if b.Agent {
			deploys = append(deploys, b)
		}
	}
	Expect(deploys).NotTo(BeEmpty(), "the node booted the deploy ramdisk")
	last := deploys[len(deploys)-1]
	Expect(last.Device).To(Equal(lab.BootCD))
	Expect(last.ISO).To(Equal(deployISO))
	Expect(last.Floppy).NotTo(BeEmpty())
	Expect(last.Cmdline).To(And(ContainSubstring("boot_method=vmedia"), ContainSubstring("ipa-api-url=")))
	return last
}

// expectBootedISO checks the node's last start was from a boot ISO whose
// root= names the deployed root partition.
func expectBootedISO(node *lab.Node) {
	GinkgoHelper()
	last := steps.EventuallyBooted(node, lab.BootCD)
	Expect(last.Root).To(HavePrefix("UUID="))
	Expect(last.RootFound).To(BeTrue(), "root=%s names the deployed root partition", last.Root)
	cd, fl := node.InsertedMedia()
	Expect(cd).To(Equal(last.ISO), "the boot ISO stays in the drive")
	Expect(fl).To(BeEmpty(), "the floppy is gone")
}

// expectUnpublished checks the deploy's floppy is gone: its temporary URL
// answers 401 or 404 and, in Swift, no object image-<node uuid>-… is
// left.
func expectUnpublished(ctx context.Context, group, uuid, floppyURL string) {
	GinkgoHelper()
	resp, err := http.Get(floppyURL)
	Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	Expect(resp.StatusCode).To(BeElementOf(http.StatusUnauthorized, http.StatusNotFound), "GET %s", floppyURL)
	if group == groupSwift {
		Expect(swiftObjects(ctx, publish.FloppyName(uuid))).To(BeEmpty(), "no floppy of the node, of any boot, in Swift")
	}
}

// swiftObjectStatus is the status of a HEAD of the object in the suite's
// container, with the account's token.
func swiftObjectStatus(ctx context.Context, object string) int {
	GinkgoHelper()
	resp := swiftRequest(ctx, http.MethodHead, "/"+object)
	resp.Body.Close()
	return resp.StatusCode
}

// swiftObjects lists the objects in the suite's container whose names
// start with prefix; none when the container does not exist.
func swiftObjects(ctx context.Context, prefix string) []string {
	GinkgoHelper()
	resp := swiftRequest(ctx, http.MethodGet, "?prefix="+url.QueryEscape(prefix))
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil // no container: nothing was ever published
	}
	Expect(resp.StatusCode).To(BeElementOf(http.StatusOK, http.StatusNoContent))
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return strings.Fields(string(body))
}

// swiftRequest sends a request, authenticated as the suite's Swift user,
// to the suite's container followed by suffix.
func swiftRequest(ctx context.Context, method, suffix string) *http.Response {
	GinkgoHelper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, swift.AuthURL, nil)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("X-Auth-User", swift.Username)
	req.Header.Set("X-Auth-Key", swift.Key)
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	r, err := http.NewRequestWithContext(ctx, method, resp.Header.Get("X-Storage-Url")+"/"+container+suffix, nil)
	Expect(err).NotTo(HaveOccurred())
	r.Header.Set("X-Auth-Token", resp.Header.Get("X-Auth-Token"))
	resp, err = http.DefaultClient.Do(r)
	Expect(err).NotTo(HaveOccurred())
	return resp
}

// undeploy tears the instance down and checks the node is off, its
// ramdisk gone and its drives empty.
func undeploy(ctx context.Context, node *lab.Node, uuid string) {
	GinkgoHelper()
	steps.Provision(ctx, client, uuid, nodes.TargetDeleted)
	n := steps.EventuallyRests(ctx, client, uuid, "available", deployTimeout)
	Expect(n.PowerState).To(Equal("power off"))
	Expect(node.AgentRunning()).To(BeFalse())
	Expect(node.InsertedMedia()).To(BeEmpty())
}

// tenantData makes the node's disk look used: random data at its start.
func tenantData(node *lab.Node) {
	GinkgoHelper()
	f, err := os.OpenFile(node.Disk, os.O_WRONLY, 0)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	rnd, err := os.Open("/dev/urandom")
	Expect(err).NotTo(HaveOccurred())
	defer rnd.Close()
	_, err = io.CopyN(f, rnd, 1<<20)
	Expect(err).NotTo(HaveOccurred())
}
