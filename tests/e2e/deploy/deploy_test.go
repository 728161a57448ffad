package deploy_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/ports"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/lab"
	"github.com/ferricbm/ferric/tests/lab/bmc"
)

// deployTimeout bounds a deploy: boot, callback, an image write over
// loopback iSCSI (a partition image writes over 2 GiB of partitions) and
// the reboot.
const deployTimeout = 5 * time.Minute

var _ = Describe("Deploying lab nodes with the ipmi driver", Ordered, func() {
	var whole steps.DiskImage

	BeforeAll(func() { whole = steps.NewDiskImage(workDir, "whole", 8<<20) })

	It("deploys a whole-disk image through the agent's heartbeat and undeploys it", func(ctx SpecContext) {
		node := theLab.Nodes[0]
		node.SetMode(lab.ModeAuto)
		uuid := enrol(ctx, node, "")
		steps.SetInstanceInfo(ctx, client, uuid, map[string]any{"image_source": imageURL + "/whole.qcow2", "image_checksum": whole.MD5})

		for _, target := range []nodes.TargetProvisionState{nodes.TargetActive, nodes.TargetRebuild} {
			By("deploying with target " + string(target))
			deployBoots := len(agentBoots(node))
			steps.Provision(ctx, client, uuid, target)
			n := steps.EventuallyActive(ctx, client, uuid, deployTimeout)
			Expect(n.DriverInternalInfo).NotTo(HaveKey("agent_url"), "the ramdisk is gone with the deploy")
			Expect(n.DriverInternalInfo).NotTo(HaveKey("agent_secret_token"))

			By("the disk holds the image and the node booted from it")
			Expect(agentBoots(node)).To(HaveLen(deployBoots+1), "one deploy ramdisk boot")
			Expect(steps.DiskStartsWith(node.Disk, whole.CheckRaw)).To(BeTrue(), "disk starts with the image's raw bytes")
			expectDeployBoot(node, "ipa-api-url=")
			steps.EventuallyBooted(node, lab.BootDisk)
			Expect(node.BMC.PowerState()).To(Equal(bmc.PowerOn))
			Expect(node.PXEConfigPath()).NotTo(BeAnExistingFile(), "a whole-disk image boots locally")
		}

		undeploy(ctx, node, uuid)
	}, SpecTimeout(2*deployTimeout+2*time.Minute))

	It("deploys a whole-disk image through the callback-only ramdisk (pass_deploy_info)", func(ctx SpecContext) {
		node := theLab.Nodes[1]
		node.SetMode(lab.ModeCallback)
		DeferCleanup(node.SetMode, lab.ModeAuto)
		Expect(os.Truncate(node.Disk, 0)).To(Succeed())
		Expect(os.Truncate(node.Disk, 3<<30)).To(Succeed())
		uuid := enrol(ctx, node, "iscsi")
		steps.SetInstanceInfo(ctx, client, uuid, map[string]any{"image_source": imageURL + "/whole.qcow2", "image_checksum": whole.MD5})

		steps.Provision(ctx, client, uuid, nodes.TargetActive)
		n := steps.EventuallyActive(ctx, client, uuid, deployTimeout)
		Expect(n.DriverInternalInfo).NotTo(HaveKey("agent_url"), "no heartbeat: the ramdisk only called back")

		Expect(steps.DiskStartsWith(node.Disk, whole.CheckRaw)).To(BeTrue(), "disk starts with the image's raw bytes")
		expectDeployBoot(node, "deployment_key=")
		log, err := os.ReadFile(node.AgentLog())
		Expect(err).NotTo(HaveOccurred())
		Expect(string(log)).To(ContainSubstring("Deploy info passed"))
		steps.EventuallyBooted(node, lab.BootDisk)

		undeploy(ctx, node, uuid)
	}, SpecTimeout(deployTimeout+2*time.Minute))

	It("deploys four nodes at once, two through agent heartbeats and two through pass_deploy_info", func(ctx SpecContext) {
		// Before nodes had addresses of their own, two ramdisks shared the
		// portal and port 10000, so the second export or "done" listener
		// failed.
		type deploying struct {
			node *lab.Node
			uuid string
			mode string
		}
		var all []deploying
		for i, node := range theLab.Nodes[:4] {
			mode, vendor := lab.ModeAuto, ""
			if i%2 == 1 {
				mode, vendor = lab.ModeCallback, "iscsi"
			}
			node.SetMode(mode)
			DeferCleanup(node.SetMode, lab.ModeAuto)
			uuid := enrol(ctx, node, vendor)
			steps.SetInstanceInfo(ctx, client, uuid, map[string]any{"image_source": imageURL + "/whole.qcow2", "image_checksum": whole.MD5})
			all = append(all, deploying{node: node, uuid: uuid, mode: mode})
		}
		for _, d := range all {
			steps.Provision(ctx, client, d.uuid, nodes.TargetActive)
		}
		for _, d := range all {
			n := steps.EventuallyActive(ctx, client, d.uuid, deployTimeout)
			Expect(steps.DiskStartsWith(d.node.Disk, whole.CheckRaw)).To(BeTrue(), "%s's disk starts with the image", d.node.Name)
			if d.mode == lab.ModeCallback {
				Expect(n.DriverInternalInfo).NotTo(HaveKey("agent_url"))
				expectDeployBoot(d.node, "deployment_key=")
			} else {
				// Its own address held the target the conductor wrote: the
				// agent's URL went with the ramdisk.
				Expect(n.DriverInternalInfo).NotTo(HaveKey("agent_url"))
				expectDeployBoot(d.node, "ipa-api-url=")
			}
		}
		for _, d := range all {
			steps.Provision(ctx, client, d.uuid, nodes.TargetDeleted)
		}
		for _, d := range all {
			expectUndeployed(ctx, d.node, d.uuid)
		}
	}, SpecTimeout(deployTimeout+3*time.Minute))

	It("deploys a partition image with swap, ephemeral and a config drive", func(ctx SpecContext) {
		node := theLab.Nodes[0]
		node.SetMode(lab.ModeAuto)
		Expect(os.Truncate(node.Disk, 0)).To(Succeed())
		Expect(os.Truncate(node.Disk, 3<<30)).To(Succeed())

		By("building an ext4 root filesystem image")
		rootRaw := filepath.Join(workDir, "root.raw")
		Expect(os.Truncate(createFile(rootRaw), 32<<20)).To(Succeed())
		steps.Run("mkfs.ext4", "-q", "-F", "-L", "lab-root", rootRaw)
		rootUUID := strings.TrimSpace(steps.Output("blkid", "-s", "UUID", "-o", "value", rootRaw))
		Expect(rootUUID).NotTo(BeEmpty())
		part := filepath.Join(workDir, "served", "root.qcow2")
		steps.Run("qemu-img", "convert", "-f", "raw", "-O", "qcow2", rootRaw, part)

		uuid := enrol(ctx, node, "")
		steps.SetInstanceInfo(ctx, client, uuid, map[string]any{"image_source": imageURL + "/root.qcow2", "image_checksum": steps.MD5File(part),
			"kernel": "file://" + deployKernel, "ramdisk": "file://" + deployRamdisk,
			"root_gb": 1, "swap_mb": 16, "ephemeral_gb": 1,
			// The image is a bare filesystem, no GRUB to boot it from disk.
			"capabilities": map[string]any{"boot_option": "netboot"}})

		Expect(nodes.ChangeProvisionState(ctx, client, uuid, nodes.ProvisionStateOpts{
			Target: nodes.TargetActive, ConfigDrive: configDrive()}).ExtractErr()).To(Succeed())
		n := steps.EventuallyActive(ctx, client, uuid, deployTimeout)
		Expect(n.DriverInternalInfo).To(HaveKeyWithValue("root_uuid_or_disk_id", rootUUID))

		By("checking the partition layout: ephemeral, swap, config drive, root last")
		parts := partitions(node.Disk)
		Expect(parts).To(HaveLen(4))
		const mib = 1 << 20
		Expect(parts[0].Start * 512).To(BeEquivalentTo(1 * mib))
		Expect(parts[0].Size * 512).To(BeEquivalentTo(1024 * mib))
		Expect(parts[1].Size * 512).To(BeEquivalentTo(16 * mib))
		Expect(parts[3].Size * 512).To(BeEquivalentTo(1024 * mib))
		Expect(probe(node.Disk, parts[0])).To(And(HaveKeyWithValue("TYPE", "ext4"), HaveKeyWithValue("LABEL", "ephemeral0")))
		Expect(probe(node.Disk, parts[1])).To(And(HaveKeyWithValue("TYPE", "swap"), HaveKeyWithValue("LABEL", "swap1")))
		Expect(probe(node.Disk, parts[2])).To(And(HaveKeyWithValue("TYPE", "iso9660"), HaveKeyWithValue("LABEL", "config-2")))
		Expect(probe(node.Disk, parts[3])).To(And(HaveKeyWithValue("TYPE", "ext4"), HaveKeyWithValue("UUID", rootUUID)))
		Expect(steps.DiskHolds(node.Disk, parts[3].Start*512, rootRaw)).To(BeTrue(), "root partition holds the image")

		undeploy(ctx, node, uuid)
	}, SpecTimeout(deployTimeout+2*time.Minute))
})

// enrol creates an ipmi node for the lab node with a port for its MAC and
// brings it to available. vendor is the vendor interface ("" for the
// hardware type's default, no-vendor): the callback-only ramdisk needs
// "iscsi", which answers pass_deploy_info.
func enrol(ctx context.Context, node *lab.Node, vendor string) string {
	GinkgoHelper()
	return enrolInGroup(ctx, node, vendor, "")
}

// enrolInGroup is enrol for a node managed by the conductors of group.
func enrolInGroup(ctx context.Context, node *lab.Node, vendor, group string) string {
	GinkgoHelper()
	n, err := nodes.Create(ctx, client, nodes.CreateOpts{
		Name:            steps.Name(node.Name, 0),
		Driver:          "ipmi",
		VendorInterface: vendor,
		ConductorGroup:  group,
		DriverInfo:      node.DriverInfo("file://"+deployKernel, "file://"+deployRamdisk),
		Properties:      map[string]any{"cpus": 1, "memory_mb": 1024, "local_gb": 3},
	}).Extract()
	Expect(err).NotTo(HaveOccurred())
	_, err = ports.Create(ctx, client, ports.CreateOpts{NodeUUID: n.UUID, Address: node.MAC}).Extract()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		cur, err := nodes.Get(ctx, client, n.UUID).Extract()
		Expect(err).NotTo(HaveOccurred())
		if cur.ProvisionState != "available" && cur.ProvisionState != "enroll" {
			_, err = nodes.Update(ctx, client, n.UUID, nodes.UpdateOpts{
				nodes.UpdateOperation{Op: nodes.ReplaceOp, Path: "/maintenance", Value: true}}).Extract()
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(nodes.Delete(ctx, client, n.UUID).ExtractErr()).To(Succeed())
	}, NodeTimeout(30*time.Second))
	steps.Provision(ctx, client, n.UUID, nodes.TargetManage)
	steps.EventuallyRests(ctx, client, n.UUID, "manageable", deployTimeout)
	steps.Provision(ctx, client, n.UUID, nodes.TargetProvide)
	steps.EventuallyRests(ctx, client, n.UUID, "available", deployTimeout)
	return n.UUID
}

// expectDeployBoot checks the node PXE-booted the deploy ramdisk with a
// command line holding param.
func expectDeployBoot(node *lab.Node, param string) {
	GinkgoHelper()
	deploys := agentBoots(node)
	Expect(deploys).NotTo(BeEmpty(), "the node booted the deploy ramdisk")
	last := deploys[len(deploys)-1]
	Expect(last.Device).To(Equal(lab.BootPXE))
	Expect(last.Label).To(Equal("deploy"))
	Expect(last.Cmdline).To(ContainSubstring(param))
}

// agentBoots are the node's boots into the deploy ramdisk.
func agentBoots(node *lab.Node) []lab.Boot {
	var out []lab.Boot
	for _, b := range node.Boots() {
		if b.Agent {
			out = append(out, b)
		}
	}
	return out
}

// undeploy tears the instance down.
func undeploy(ctx context.Context, node *lab.Node, uuid string) {
	GinkgoHelper()
	steps.Provision(ctx, client, uuid, nodes.TargetDeleted)
	expectUndeployed(ctx, node, uuid)
}

// expectUndeployed waits for the undeploy to end and checks the node is
// off with no PXE configuration left.
func expectUndeployed(ctx context.Context, node *lab.Node, uuid string) {
	GinkgoHelper()
	n := steps.EventuallyRests(ctx, client, uuid, "available", deployTimeout)
	Expect(n.PowerState).To(Equal("power off"))
	Expect(node.BMC.PowerState()).To(Equal(bmc.PowerOff))
	Expect(node.AgentRunning()).To(BeFalse())
	Expect(node.PXEConfigPath()).NotTo(BeAnExistingFile())
}

// configDrive is a gzipped, base64-encoded ISO 9660 config drive.
func configDrive() string {
	GinkgoHelper()
	src := filepath.Join(workDir, "configdrive")
	meta := filepath.Join(src, "openstack", "latest")
	Expect(os.MkdirAll(meta, 0o755)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(meta, "meta_data.json"), []byte(`{"uuid": "lab"}`), 0o644)).To(Succeed())
	iso := filepath.Join(workDir, "configdrive.iso")
	steps.Run("xorriso", "-as", "mkisofs", "-quiet", "-R", "-V", "config-2", "-o", iso, src)
	data, err := os.ReadFile(iso)
	Expect(err).NotTo(HaveOccurred())
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err = zw.Write(data)
	Expect(err).NotTo(HaveOccurred())
	Expect(zw.Close()).To(Succeed())
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

type partition struct {
	Start int64  `json:"start"`
	Size  int64  `json:"size"`
	Type  string `json:"type"`
}

// partitions reads the disk's partition table with sfdisk, in disk order.
func partitions(disk string) []partition {
	GinkgoHelper()
	var doc struct {
		Table struct {
			Partitions []partition `json:"partitions"`
		} `json:"partitiontable"`
	}
	Expect(json.Unmarshal([]byte(steps.Output("sfdisk", "--json", disk)), &doc)).To(Succeed())
	return doc.Table.Partitions
}

// probe runs blkid on one partition of the disk file.
func probe(disk string, p partition) map[string]string {
	GinkgoHelper()
	out := steps.Output("blkid", "-p", "-o", "export", "--offset", itoa(p.Start*512), "--size", itoa(p.Size*512), disk)
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			m[k] = v
		}
	}
	return m
}

func createFile(path string) string {
	GinkgoHelper()
	f, err := os.Create(path)
	Expect(err).NotTo(HaveOccurred())
	Expect(f.Close()).To(Succeed())
	return path
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
