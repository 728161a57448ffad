package vmedia_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/ports"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/lab"
)

// deployTimeout bounds a deploy: media inserted, the ramdisk booted from
// them, a small image written over loopback iSCSI, the reboot.
const deployTimeout = 3 * time.Minute

var _ = Describe("Deploying lab nodes by virtual media", Ordered, func() {
	var wholeDisk, wholeDiskRaw, wholeDiskSum string

	BeforeAll(func() {
		raw := filepath.Join(workDir, "whole.raw")
		wholeDisk = filepath.Join(workDir, "served", "whole.qcow2")
		randomFile(raw, 8<<20)
		run("qemu-img", "convert", "-f", "raw", "-O", "qcow2", raw, wholeDisk)
		wholeDiskRaw = filepath.Join(workDir, "whole.check.raw")
		run("qemu-img", "convert", "-O", "raw", wholeDisk, wholeDiskRaw)
		wholeDiskSum = md5File(wholeDisk)
	})

	// deployWholeDisk deploys the whole-disk image onto the nodes at once
	// and checks what a user would: active, the image on the disk, the
	// node started from it; the ramdisk came from the deploy ISO with the
	// floppy, and both are ejected and unpublished.
	deployWholeDisk := func(ctx context.Context, group string, all ...*lab.Node) []string {
		GinkgoHelper()
		var uuids []string
		for _, node := range all {
			uuid := enrol(ctx, node, group)
			setImage(ctx, uuid, map[string]any{"image_source": imageURL + "/whole.qcow2", "image_checksum": wholeDiskSum})
			uuids = append(uuids, uuid)
		}
		for _, uuid := range uuids {
			steps.Provision(ctx, client, uuid, nodes.TargetActive)
		}
		for i, node := range all {
			eventuallyActive(ctx, uuids[i])
			Expect(prefixEqual(node.Disk, wholeDiskRaw)).To(BeTrue(), "%s's disk starts with the image's raw bytes", node.Name)
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
		uuid := strings.TrimSpace(runFerricctl(ctx, args...))
		deleteAfter(uuid)
		runFerricctl(ctx, "port", "create", node.MAC, "--node", uuid)
		runFerricctl(ctx, "node", "manage", uuid)
		eventuallyState(ctx, uuid, "manageable")
		runFerricctl(ctx, "node", "provide", uuid)
		eventuallyState(ctx, uuid, "available")
		runFerricctl(ctx, "node", "set", uuid, "--instance-info", "image_source="+imageURL+"/whole.qcow2",
			"--instance-info", "image_checksum="+wholeDiskSum)
		runFerricctl(ctx, "node", "deploy", uuid)

		eventuallyActive(ctx, uuid)
		Expect(prefixEqual(node.Disk, wholeDiskRaw)).To(BeTrue(), "the disk starts with the image's raw bytes")
		steps.EventuallyBooted(node, lab.BootDisk)
		deploy := expectDeployBoot(node)
		Expect(deploy.Floppy).To(HavePrefix("http://127.0.0.1:"), "the floppy is on the conductor's boot file server")
		expectUnpublished(ctx, groupWeb, uuid, deploy.Floppy)
		Expect(node.InsertedMedia()).To(BeEmpty())
		runFerricctl(ctx, "node", "undeploy", uuid)
		n := eventuallyState(ctx, uuid, "available")
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
		eventuallyState(ctx, uuid, "manageable")
		Expect(nodes.ChangeProvisionState(ctx, client, uuid, nodes.ProvisionStateOpts{Target: nodes.TargetClean,
			CleanSteps: []nodes.CleanStep{{Interface: nodes.InterfaceDeploy, Step: "erase_devices"}}}).ExtractErr()).To(Succeed())
		n := eventuallyState(ctx, uuid, "manageable")
		Expect(n.LastError).To(BeEmpty())
		Expect(n.PowerState).To(Equal("power off"))

		Expect(zeroed(node)).To(BeTrue(), "every byte of the disk is zero")
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

	It("fails the deploy with a clear last_error and nothing attached or published: ISO missing, wrong BMC password", func(ctx SpecContext) {
		missing, locked := iloLab.Nodes[0], redfishLab.Nodes[0]
		missingUUID := enrol(ctx, missing, groupSwift)
		_, err := nodes.Update(ctx, client, missingUUID, nodes.UpdateOpts{nodes.UpdateOperation{Op: nodes.ReplaceOp,
			Path: "/driver_info/deploy_iso", Value: imageURL + "/missing.iso"}}).Extract()
		Expect(err).NotTo(HaveOccurred())
		lockedUUID := enrol(ctx, locked, groupSwift)
		locked.ILO.Redfish.SetPassword("not-the-one-in-driver-info")
		DeferCleanup(locked.ILO.Redfish.SetPassword, locked.ILO.Password)

		for _, c := range []struct {
			node    *lab.Node
			uuid    string
			message string
		}{{missing, missingUUID, "Virtual Media"}, {locked, lockedUUID, "password"}} {
			setImage(ctx, c.uuid, map[string]any{"image_source": imageURL + "/whole.qcow2", "image_checksum": wholeDiskSum})
			steps.Provision(ctx, client, c.uuid, nodes.TargetActive)
			n := eventuallyFailed(ctx, c.uuid)
			Expect(n.LastError).To(ContainSubstring(c.message))
			Expect(n.LastError).NotTo(ContainSubstring("not-the-one"), "no password in last_error")
			Expect(c.node.InsertedMedia()).To(BeEmpty(), "nothing attached")
			Expect(c.node.AgentRunning()).To(BeFalse())
			Expect(swiftObjectStatus(ctx, "image-"+c.uuid)).To(Equal(http.StatusNotFound), "nothing published")
		}
	}, SpecTimeout(deployTimeout))

	It("deploys one partition image onto two iLO 4 nodes, each booting it from a boot ISO, also after a reboot", func(ctx SpecContext) {
		By("building an ext4 root filesystem image")
		rootRaw := filepath.Join(workDir, "root.raw")
		Expect(os.WriteFile(rootRaw, nil, 0o644)).To(Succeed())
		Expect(os.Truncate(rootRaw, 32<<20)).To(Succeed())
		run("mkfs.ext4", "-q", "-F", "-L", "lab-root", rootRaw)
		part := filepath.Join(workDir, "served", "root.qcow2")
		run("qemu-img", "convert", "-f", "raw", "-O", "qcow2", rootRaw, part)
		// The lab never runs the instance kernel: a placeholder does.
		kernel := filepath.Join(workDir, "served", "instance.kernel")
		Expect(os.WriteFile(kernel, []byte("placeholder: the lab checks root= only"), 0o644)).To(Succeed())

		nodesOf := iloLab.Nodes[:2]
		var uuids []string
		for _, node := range nodesOf {
			uuid := enrol(ctx, node, groupSwift)
			setImage(ctx, uuid, map[string]any{"image_source": imageURL + "/root.qcow2", "image_checksum": md5File(part),
				"kernel": imageURL + "/" + filepath.Base(kernel), "ramdisk": imageURL + "/" + filepath.Base(kernel), "root_gb": 1,
				"capabilities": map[string]any{"boot_option": "netboot"}})
			uuids = append(uuids, uuid)
		}
		for _, uuid := range uuids {
			steps.Provision(ctx, client, uuid, nodes.TargetActive)
		}
		for i, node := range nodesOf {
			eventuallyActive(ctx, uuids[i])
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

		By("rebooting the first node: its boot ISO is attached again")
		boots := len(nodesOf[0].Boots())
		Expect(nodes.ChangePowerState(ctx, client, uuids[0], nodes.PowerStateOpts{Target: nodes.Rebooting}).ExtractErr()).To(Succeed())
		Eventually(func() int { return len(nodesOf[0].Boots()) }).WithTimeout(time.Minute).Should(BeNumerically(">", boots))
		expectBootedISO(nodesOf[0])

		undeploy(ctx, nodesOf[0], uuids[0])
		Expect(swiftObjectStatus(ctx, sharedISO)).To(Equal(http.StatusOK), "the second node still boots it")
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
	eventuallyState(ctx, n.UUID, "manageable")
	steps.Provision(ctx, client, n.UUID, nodes.TargetProvide)
	eventuallyState(ctx, n.UUID, "available")
	return n.UUID
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

func runFerricctl(ctx context.Context, args ...string) string {
	GinkgoHelper()
	cmd := exec.CommandContext(ctx, ferricctl, args...)
	cmd.Env = append(os.Environ(), "OS_ENDPOINT="+deployment.APIURL, "OS_AUTH_TYPE=none")
	out, err := cmd.Output()
	var stderr []byte
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = ee.Stderr
	}
	Expect(err).NotTo(HaveOccurred(), "ferricctl %v: %s", args, stderr)
	return string(out)
}

func setImage(ctx context.Context, uuid string, info map[string]any) {
	GinkgoHelper()
	var ops nodes.UpdateOpts
	for k, v := range info {
		ops = append(ops, nodes.UpdateOperation{Op: nodes.AddOp, Path: "/instance_info/" + k, Value: v})
	}
	_, err := nodes.Update(ctx, client, uuid, ops).Extract()
	Expect(err).NotTo(HaveOccurred())
}

func eventuallyState(ctx context.Context, uuid, state string) *nodes.Node {
	GinkgoHelper()
	var n *nodes.Node
	Eventually(func(g Gomega) {
		var err error
		n, err = nodes.Get(ctx, client, uuid).Extract()
		g.Expect(err).NotTo(HaveOccurred())
		if slices.Contains([]string{"deploy failed", "clean failed", "error"}, n.ProvisionState) {
			StopTrying("node " + uuid + " is in " + n.ProvisionState + ": " + n.LastError).Now()
		}
		g.Expect(n.ProvisionState).To(Equal(state))
		g.Expect(n.TargetProvisionState).To(BeEmpty())
		g.Expect(n.Reservation).To(BeEmpty())
	}).WithContext(ctx).WithTimeout(deployTimeout).WithPolling(500 * time.Millisecond).Should(Succeed())
	return n
}

// eventuallyFailed waits for the deploy to fail and returns the node.
func eventuallyFailed(ctx context.Context, uuid string) *nodes.Node {
	GinkgoHelper()
	var n *nodes.Node
	Eventually(func(g Gomega) {
		var err error
		n, err = nodes.Get(ctx, client, uuid).Extract()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n.ProvisionState).To(Equal("deploy failed"))
		g.Expect(n.Reservation).To(BeEmpty())
	}).WithContext(ctx).WithTimeout(deployTimeout).WithPolling(500 * time.Millisecond).Should(Succeed())
	return n
}

func eventuallyActive(ctx context.Context, uuid string) {
	GinkgoHelper()
	n := eventuallyState(ctx, uuid, "active")
	Expect(n.LastError).To(BeEmpty())
	Expect(n.PowerState).To(Equal("power on"))
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
// answers 401 or 404 and, in Swift, the object image-<node uuid> is
// deleted.
func expectUnpublished(ctx context.Context, group, uuid, floppyURL string) {
	GinkgoHelper()
	resp, err := http.Get(floppyURL)
	Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	Expect(resp.StatusCode).To(BeElementOf(http.StatusUnauthorized, http.StatusNotFound), "GET %s", floppyURL)
	if group == groupSwift {
		Expect(swiftObjectStatus(ctx, "image-"+uuid)).To(Equal(http.StatusNotFound))
	}
}

// swiftObjectStatus is the status of a HEAD of the object in the suite's
// container, with the account's token.
func swiftObjectStatus(ctx context.Context, object string) int {
	GinkgoHelper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, swift.AuthURL, nil)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("X-Auth-User", swift.Username)
	req.Header.Set("X-Auth-Key", swift.Key)
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	head, err := http.NewRequestWithContext(ctx, http.MethodHead, resp.Header.Get("X-Storage-Url")+"/"+container+"/"+object, nil)
	Expect(err).NotTo(HaveOccurred())
	head.Header.Set("X-Auth-Token", resp.Header.Get("X-Auth-Token"))
	resp, err = http.DefaultClient.Do(head)
	Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	return resp.StatusCode
}

// undeploy tears the instance down and checks the node is off, its
// ramdisk gone and its drives empty.
func undeploy(ctx context.Context, node *lab.Node, uuid string) {
	GinkgoHelper()
	steps.Provision(ctx, client, uuid, nodes.TargetDeleted)
	n := eventuallyState(ctx, uuid, "available")
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

func zeroed(node *lab.Node) bool {
	GinkgoHelper()
	data, err := os.ReadFile(node.Disk)
	Expect(err).NotTo(HaveOccurred())
	return !bytes.ContainsFunc(data, func(r rune) bool { return r != 0 })
}

// prefixEqual tells whether disk starts with want's bytes.
func prefixEqual(disk, want string) bool {
	GinkgoHelper()
	w, err := os.ReadFile(want)
	Expect(err).NotTo(HaveOccurred())
	f, err := os.Open(disk)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	got := make([]byte, len(w))
	_, err = f.ReadAt(got, 0)
	Expect(err).NotTo(HaveOccurred())
	return bytes.Equal(got, w)
}

func randomFile(path string, size int64) {
	GinkgoHelper()
	f, err := os.Create(path)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	rnd, err := os.Open("/dev/urandom")
	Expect(err).NotTo(HaveOccurred())
	defer rnd.Close()
	_, err = io.CopyN(f, rnd, size)
	Expect(err).NotTo(HaveOccurred())
}

func md5File(path string) string {
	GinkgoHelper()
	f, err := os.Open(path)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	h := md5.New()
	_, err = io.Copy(h, f)
	Expect(err).NotTo(HaveOccurred())
	return hex.EncodeToString(h.Sum(nil))
}

func run(name string, args ...string) {
	GinkgoHelper()
	out, err := exec.Command(name, args...).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "%s %s: %s", name, strings.Join(args, " "), out)
}
