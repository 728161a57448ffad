package deploy_test

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/image/glancetest"
	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/lab"
)

var _ = Describe("Deploying Glance images onto lab nodes", Ordered, func() {
	const (
		imageID   = "6a0f6c0e-8e55-4f0e-9b0c-2d9f3b7a1e01"
		corruptID = "6a0f6c0e-8e55-4f0e-9b0c-2d9f3b7a1e02"
		missingID = "6a0f6c0e-8e55-4f0e-9b0c-2d9f3b7a1e03"
	)
	var raw string

	BeforeAll(func() {
		raw = filepath.Join(workDir, "glance.raw")
		steps.RandomFile(raw, 6<<20)
		qcow := filepath.Join(workDir, "glance.qcow2")
		steps.Run("qemu-img", "convert", "-f", "raw", "-O", "qcow2", raw, qcow)
		data, err := os.ReadFile(qcow)
		Expect(err).NotTo(HaveOccurred())
		glance.Add(glancetest.Image{ID: imageID, DiskFormat: "qcow2", Data: data})
		glance.Add(glancetest.Image{ID: corruptID, DiskFormat: "qcow2", Data: data, HashValue: strings.Repeat("ab", 64)})
	})

	It("deploys a whole-disk image given by its Glance id, downloaded once and checked against os_hash_value", func(ctx SpecContext) {
		node := theLab.Nodes[2]
		node.SetMode(lab.ModeAuto)
		Expect(os.Truncate(node.Disk, 0)).To(Succeed())
		Expect(os.Truncate(node.Disk, 3<<30)).To(Succeed())
		uuid := enrol(ctx, node, "")
		steps.SetInstanceInfo(ctx, client, uuid, map[string]any{"image_source": imageID})

		steps.Provision(ctx, client, uuid, nodes.TargetActive)
		n := steps.EventuallyActive(ctx, client, uuid, deployTimeout)
		Expect(n.DriverInternalInfo).To(HaveKeyWithValue("is_whole_disk_image", true))
		Expect(steps.DiskStartsWith(node.Disk, raw)).To(BeTrue(), "the disk holds the image's raw bytes")
		Expect(glance.Downloads(imageID)).To(BeEquivalentTo(1))
		undeploy(ctx, node, uuid)
	}, SpecTimeout(deployTimeout+2*time.Minute))

	It("refuses to deploy an image Glance does not have, changing nothing", func(ctx SpecContext) {
		node := theLab.Nodes[2]
		uuid := enrol(ctx, node, "")
		steps.SetInstanceInfo(ctx, client, uuid, map[string]any{"image_source": "glance://" + missingID})
		boots := len(node.Boots())

		err := nodes.ChangeProvisionState(ctx, client, uuid, nodes.ProvisionStateOpts{Target: nodes.TargetActive}).ExtractErr()
		// Ironic's InstanceDeployFailure ("Failed to validate deploy or
		// power info") carries no 4xx code: the API answers 500.
		Expect(gophercloud.ResponseCodeIs(err, 500)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("Image " + missingID + " could not be found in Glance."))
		n, err := nodes.Get(ctx, client, uuid).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(n.ProvisionState).To(Equal("available"))
		Expect(n.Reservation).To(BeEmpty())
		Expect(node.Boots()).To(HaveLen(boots))
		expectNoFile(node.PXEConfigPath())
	}, SpecTimeout(2*time.Minute))

	It("fails the deploy of an image whose data does not match Glance's os_hash_value, leaving nothing behind", func(ctx SpecContext) {
		node := theLab.Nodes[2]
		uuid := enrol(ctx, node, "")
		steps.SetInstanceInfo(ctx, client, uuid, map[string]any{"image_source": corruptID})

		steps.Provision(ctx, client, uuid, nodes.TargetActive)
		n := expectFailedCleanly(ctx, node, uuid, "checksum mismatch: sha512 of glance://"+corruptID)
		Expect(n.PowerState).To(Equal("power off"))
	}, SpecTimeout(3*time.Minute))
})
