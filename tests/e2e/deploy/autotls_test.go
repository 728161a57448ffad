package deploy_test

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/lab"
)

// The lab's ferric-agent with ipa-enable-auto-tls=1 serves its API over
// TLS with a certificate of its own, which the conductor pins at the
// agent's first heartbeat; under [agent] require_tls a deploy goes through
// only that way. The nodes of this spec belong to a conductor group whose
// conductor has both settings, so the suite's other deploys are as before.
var _ = Describe("Deploying through ferric-agent over auto-TLS", Ordered, func() {
	const group = "auto-tls"
	var whole, wholeRaw, wholeSum string

	BeforeAll(func(ctx SpecContext) {
		raw := filepath.Join(workDir, "tls-whole.raw")
		whole = filepath.Join(workDir, "served", "tls-whole.qcow2")
		randomFile(raw, 8<<20)
		run("qemu-img", "convert", "-f", "raw", "-O", "qcow2", raw, whole)
		wholeRaw = filepath.Join(workDir, "tls-whole.check.raw")
		run("qemu-img", "convert", "-O", "raw", whole, wholeRaw)
		wholeSum = md5File(whole)

		port, err := lab.FreeTCPPort()
		Expect(err).NotTo(HaveOccurred())
		base := deployment.Base
		params := strings.TrimSpace(base["pxe"]["pxe_append_params"] + " ipa-enable-auto-tls=1")
		deployment.Base = base.Clone().Set("conductor", "conductor_group", group).
			Set("pxe", "pxe_append_params", params).
			Set("agent", "require_tls", true).
			Set("deploy", "http_url", fmt.Sprintf("http://127.0.0.1:%d", port)).
			Set("pxe", "instance_master_path", filepath.Join(workDir, "tls-images"))
		_, err = deployment.StartConductor(ctx, "conductor-tls")
		deployment.Base = base
		Expect(err).NotTo(HaveOccurred())
	})

	It("deploys a whole-disk image with the agent's API over TLS, its certificate pinned, under require_tls", func(ctx SpecContext) {
		node := theLab.Nodes[1]
		node.SetMode(lab.ModeAuto)
		uuid := enrolInGroup(ctx, node, "", group)
		setImage(ctx, uuid, map[string]any{"image_source": imageURL + "/tls-whole.qcow2", "image_checksum": wholeSum})

		steps.Provision(ctx, client, uuid, nodes.TargetActive)
		var pinned string
		Eventually(func(g Gomega) {
			n, err := nodes.Get(ctx, client, uuid).Extract()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n.DriverInternalInfo).To(HaveKeyWithValue("agent_url", HavePrefix("https://"+node.Address+":")))
			pinned, _ = n.DriverInternalInfo["agent_verify_ca"].(string)
			g.Expect(pinned).NotTo(BeEmpty())
		}).WithContext(ctx).WithTimeout(deployTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
		block, _ := pem.Decode([]byte(pinned))
		Expect(block).NotTo(BeNil())
		cert, err := x509.ParseCertificate(block.Bytes)
		Expect(err).NotTo(HaveOccurred())
		Expect(cert.IPAddresses).To(ContainElement(WithTransform(func(ip any) string { return fmt.Sprint(ip) }, Equal(node.Address))),
			"the agent's own certificate, for its address")

		n := eventuallyActive(ctx, uuid)
		Expect(n.DriverInternalInfo).NotTo(HaveKey("agent_verify_ca"), "forgotten with the ramdisk")
		Expect(n.DriverInternalInfo).NotTo(HaveKey("agent_secret_token"))
		Expect(prefixEqual(node.Disk, wholeRaw)).To(BeTrue(), "the conductor drove the write through the pinned TLS connection")
		expectDeployBoot(node, "ipa-enable-auto-tls=1")
		undeploy(ctx, node, uuid)
	}, SpecTimeout(deployTimeout+2*time.Minute))
})
