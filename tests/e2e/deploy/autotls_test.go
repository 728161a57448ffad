package deploy_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/agent"
	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/harness"
	"github.com/ferricbm/ferric/tests/lab"
)

// The lab's ferric-agent with ipa-enable-auto-tls=1 serves its API over
// TLS with a certificate of its own, which the conductor pins at the
// agent's first heartbeat; under [agent] require_tls a deploy goes through
// only that way. The nodes of this spec belong to a conductor group whose
// conductor has both settings, so the suite's other deploys are as before.
var _ = Describe("Deploying through ferric-agent over auto-TLS", Ordered, func() {
	const group = "auto-tls"
	var whole steps.DiskImage

	BeforeAll(func(ctx SpecContext) {
		whole = steps.NewDiskImage(workDir, "tls-whole", 8<<20)

		port, err := lab.FreeTCPPort()
		Expect(err).NotTo(HaveOccurred())
		params := strings.TrimSpace(deployment.Base["pxe"]["pxe_append_params"] + " ipa-enable-auto-tls=1")
		_, err = deployment.StartConductor(ctx, "conductor-tls", func(c harness.Config) harness.Config {
			return c.Set("conductor", "conductor_group", group).
				Set("pxe", "pxe_append_params", params).
				Set("agent", "require_tls", true).
				Set("deploy", "http_url", fmt.Sprintf("http://127.0.0.1:%d", port)).
				Set("pxe", "instance_master_path", filepath.Join(workDir, "tls-images"))
		})
		Expect(err).NotTo(HaveOccurred())
	})

	It("deploys a whole-disk image with the agent's API over TLS, its certificate pinned, under require_tls", func(ctx SpecContext) {
		node := theLab.Nodes[1]
		node.SetMode(lab.ModeAuto)
		uuid := enrolInGroup(ctx, node, "", group)
		steps.SetInstanceInfo(ctx, client, uuid, map[string]any{"image_source": imageURL + "/tls-whole.qcow2", "image_checksum": whole.MD5})

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

		n := steps.EventuallyActive(ctx, client, uuid, deployTimeout)
		Expect(n.DriverInternalInfo).NotTo(HaveKey("agent_verify_ca"), "forgotten with the ramdisk")
		Expect(n.DriverInternalInfo).NotTo(HaveKey("agent_secret_token"))
		Expect(steps.DiskStartsWith(node.Disk, whole.CheckRaw)).To(BeTrue(), "the conductor drove the write through the pinned TLS connection")
		expectDeployBoot(node, "ipa-enable-auto-tls=1")
		undeploy(ctx, node, uuid)
	}, SpecTimeout(deployTimeout+2*time.Minute))

	It("refuses, under require_tls, a heartbeat with the node's token presenting another certificate than the one pinned after lookup", func(ctx SpecContext) {
		// The lab boots no ramdisk: the test is the agent, through the API
		// as a ramdisk would call it, on a node in maintenance so that the
		// conductor records the heartbeats and drives nothing.
		node := theLab.Nodes[1]
		node.SetMode(lab.ModeSilent)
		DeferCleanup(node.SetMode, lab.ModeAuto)
		uuid := enrolInGroup(ctx, node, "", group)
		steps.SetInstanceInfo(ctx, client, uuid, map[string]any{"image_source": imageURL + "/tls-whole.qcow2", "image_checksum": whole.MD5})
		steps.Provision(ctx, client, uuid, nodes.TargetActive)
		Eventually(func(g Gomega) {
			n, err := nodes.Get(ctx, client, uuid).Extract()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n.ProvisionState).To(Equal("wait call-back"))
			g.Expect(n.Reservation).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(deployTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
		setMaintenance(ctx, uuid, true)

		var found struct {
			Config struct {
				AgentToken string `json:"agent_token"`
			} `json:"config"`
		}
		Expect(ramdiskCall(ctx, http.MethodGet, "/v1/lookup?addresses="+node.MAC, nil, &found)).To(Equal(http.StatusOK))
		token := found.Config.AgentToken
		Expect(token).NotTo(Or(BeEmpty(), Equal("******")))
		_, pinned, err := agent.NewSelfSignedCert(node.Address)
		Expect(err).NotTo(HaveOccurred())
		_, other, err := agent.NewSelfSignedCert(node.Address)
		Expect(err).NotTo(HaveOccurred())
		callback := "https://" + net.JoinHostPort(node.Address, strconv.Itoa(lab.AgentPort))
		heartbeat := func(url, cert string) (int, string) {
			var fault map[string]any
			code := ramdiskCall(ctx, http.MethodPost, "/v1/heartbeat/"+uuid, map[string]any{"callback_url": url,
				"agent_token": token, "agent_version": "9.0.0", "agent_verify_ca": cert}, &fault)
			return code, fmt.Sprint(fault)
		}

		code, _ := heartbeat(callback, pinned)
		Expect(code).To(Equal(http.StatusAccepted))
		code, msg := heartbeat(callback, other)
		Expect(code).To(Equal(http.StatusBadRequest))
		Expect(msg).To(ContainSubstring("is not the one its first heartbeat presented"))
		code, _ = heartbeat(callback, pinned)
		Expect(code).To(Equal(http.StatusAccepted), "the agent holding the pinned certificate is still heard")
		n, err := nodes.Get(ctx, client, uuid).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(n.DriverInternalInfo).To(HaveKeyWithValue("agent_verify_ca", pinned))

		setMaintenance(ctx, uuid, false)
		undeploy(ctx, node, uuid)
	}, SpecTimeout(deployTimeout+2*time.Minute))
})

// setMaintenance sets or clears the node's maintenance flag through
// /maintenance, which a node waiting for its ramdisk takes.
func setMaintenance(ctx context.Context, uuid string, on bool) {
	GinkgoHelper()
	r := nodes.UnsetMaintenance(ctx, client, uuid)
	if on {
		r = nodes.SetMaintenance(ctx, client, uuid, nodes.MaintenanceOpts{Reason: "the test is the agent"})
	}
	Expect(r.ExtractErr()).To(Succeed())
}

// ramdiskCall calls the API's ramdisk endpoints as ferric-agent does,
// decoding the answer into out, and returns the status.
func ramdiskCall(ctx context.Context, method, path string, body any, out any) int {
	GinkgoHelper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		Expect(err).NotTo(HaveOccurred())
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, deployment.APIURL+path, r)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("X-OpenStack-Ironic-API-Version", "1.36")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	if len(b) > 0 {
		Expect(json.Unmarshal(b, out)).To(Succeed(), "%s", b)
	}
	return resp.StatusCode
}
