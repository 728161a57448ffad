package conductor_test

import (
	"context"
	"net/http"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/driver/iscsideploy"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

// wayOut is how ferric-agent's boot loader failures end.
const wayOut = "deploy it with boot_option=netboot, or use a whole-disk image"

var _ = Describe("iSCSI deploy of a partition image booting from its disk", Label("tgtd"), func() {
	for _, backend := range backends {
		Context(backend, func() {
			// localNode is a node deploying the partition image with the
			// default boot_option, local.
			localNode := func(ctx context.Context, w *iscsiWorld, capabilities map[string]any) (*model.Node, string) {
				info := model.JSONObject{"image_source": w.images.URL + "/disk.raw", "root_gb": "1",
					"kernel": w.images.URL + "/kernel", "ramdisk": w.images.URL + "/ramdisk"}
				if capabilities != nil {
					info["capabilities"] = capabilities
				}
				n, _, backing := w.node(ctx, info, 1300)
				w.deployToWait(ctx, n.UUID)
				return n, backing
			}
			bootloaderInfo := func(ctx context.Context, w *iscsiWorld, uuid string, info map[string]any) error {
				_, err := rpc.VendorPassthru.Call(ctx, w.e.api(w.c), rpc.VendorPassthruArgs{NodeID: uuid,
					Method: iscsideploy.PassBootloaderInstallInfo, HTTPMethod: http.MethodPost, Info: info})
				return err
			}
			// writeThroughCallback runs pass_deploy_info and waits for the
			// conductor to tell the ramdisk to install the boot loader.
			writeThroughCallback := func(ctx context.Context, w *iscsiWorld, uuid, backing string) string {
				GinkgoHelper()
				iqn := iscsideploy.IQN(uuid)
				key := deployKey(w.e.node(ctx, uuid))
				Expect(w.exportAsRamdisk(iqn, backing)).To(Succeed())
				_, err := w.passDeployInfo(ctx, uuid, withCHAP(map[string]any{"key": key, "address": "127.0.0.1", "iqn": iqn,
					"port": w.tgt.Port}))
				Expect(err).NotTo(HaveOccurred())
				Eventually(w.notified, 2*time.Minute).Should(Receive(Equal("done "+ramdiskCHAPSecret)), "the ramdisk may install the boot loader")
				Eventually(w.e.reservation(ctx, uuid)).Should(BeNil())
				Expect(w.e.node(ctx, uuid).State()).To(Equal(states.DeployWait), "waiting for the second callback")
				return key
			}

			It("waits after pass_deploy_info for pass_bootloader_install_info and goes active when the ramdisk installed GRUB", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, backing := localNode(ctx, w, nil)
				key := writeThroughCallback(ctx, w, n.UUID, backing)
				Expect(w.e.hwPower(n.UUID)).To(Equal(states.PowerOn), "the ramdisk keeps running")

				By("checking the second callback as the first: node waiting, parameters, key")
				err := bootloaderInfo(ctx, w, n.UUID, map[string]any{"key": key, "address": "127.0.0.1"})
				Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
				Expect(errs.Message(err)).To(Equal("Parameters ['status'] were not passed to ironic for deploy."))
				wrong := "x" + key[1:]
				if key[0] == 'x' {
					wrong = "y" + key[1:]
				}
				err = bootloaderInfo(ctx, w, n.UUID, map[string]any{"key": wrong, "address": "127.0.0.1", "status": "SUCCEEDED"})
				Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
				Expect(errs.Message(err)).To(Equal("Deploy key does not match"))
				By("refusing the right key without the CHAP secret the ramdisk exported the disk with, which TFTP never served")
				for _, secret := range []any{nil, "", "Wm4Xc7Vb2Nq9Lp5Rt8Zk3Hs7"} {
					err = bootloaderInfo(ctx, w, n.UUID, map[string]any{"key": key, "address": "127.0.0.1", "status": "SUCCEEDED",
						"chap_secret": secret})
					Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
					Expect(errs.Message(err)).To(Equal("chap_secret does not match the one the deploy ramdisk exported the disk with"))
				}
				Expect(w.e.node(ctx, n.UUID).State()).To(Equal(states.DeployWait))

				By("ignoring an agent's heartbeat meanwhile: the deploy is the callback-only ramdisk's to finish")
				stub := w.agentHeartbeat(ctx, n.UUID, backing, nil)
				Consistently(stub.commandCount, time.Second).Should(BeZero())
				Expect(w.e.node(ctx, n.UUID).State()).To(Equal(states.DeployWait))

				By("going active once the ramdisk reports the boot loader installed")
				Expect(bootloaderInfo(ctx, w, n.UUID, map[string]any{"key": key, "address": "127.0.0.1", "status": "SUCCEEDED", "error": "", "chap_secret": ramdiskCHAPSecret})).To(Succeed())
				Eventually(w.e.provisionState(ctx, n.UUID), time.Minute).Should(Equal(states.Active))
				Eventually(w.notified).Should(Receive(Equal("done "+ramdiskCHAPSecret)), "done again, ending the ramdisk")
				Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
				final := w.e.node(ctx, n.UUID)
				Expect(final.LastError).To(BeNil())
				Expect(final.DriverInternalInfo).NotTo(HaveKey("waiting_for_bootloader_install"))
				Expect(w.e.hwPower(n.UUID)).To(Equal(states.PowerOn))

				By("refusing the callback once more: it is accepted once")
				err = bootloaderInfo(ctx, w, n.UUID, map[string]any{"key": key, "address": "127.0.0.1", "status": "SUCCEEDED"})
				Expect(errs.Status(err)).To(Equal(http.StatusBadRequest))
				Expect(w.e.node(ctx, n.UUID).State()).To(Equal(states.Active))
			})

			It("fails the deploy, never active, when the callback-only ramdisk could not install the boot loader", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				n, backing := localNode(ctx, w, nil)
				key := writeThroughCallback(ctx, w, n.UUID, backing)
				failure := "boot loader install on /dev/sda failed: the image holds no GRUB; the instance cannot boot from its disk; " + wayOut
				Expect(bootloaderInfo(ctx, w, n.UUID, map[string]any{"key": key, "address": "127.0.0.1", "status": "FAILED",
					"error": failure, "chap_secret": ramdiskCHAPSecret})).To(Succeed())
				Eventually(w.e.provisionState(ctx, n.UUID), time.Minute).Should(Equal(states.DeployFail))
				Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
				final := w.e.node(ctx, n.UUID)
				Expect(str(final.LastError)).To(Equal("Failed to install bootloader on node " + n.UUID + ". Error: " + failure + "."))
				Expect(final.DriverInternalInfo).NotTo(HaveKey("waiting_for_bootloader_install"))
				Expect(w.e.hwPower(n.UUID)).NotTo(Equal(states.PowerOn))
			})

			It("has the agent install the boot loader into the written root, with the ESP for UEFI, and fails the deploy when it cannot", func(ctx SpecContext) {
				w := newISCSIWorld(ctx, backend)
				By("BIOS: root_uuid of the written root and no ESP")
				n, backing := localNode(ctx, w, nil)
				stub := w.agentHeartbeat(ctx, n.UUID, backing, nil)
				Eventually(w.e.provisionState(ctx, n.UUID), 2*time.Minute).Should(Equal(states.Active))
				final := w.e.node(ctx, n.UUID)
				Expect(stub.command()).To(Equal(map[string]any{"name": "image.install_bootloader", "params": map[string]any{
					"root_uuid": final.DriverInternalInfo["root_uuid_or_disk_id"], "efi_system_part_uuid": nil}}))

				By("UEFI: the volume ID of the ESP the write made")
				n, backing = localNode(ctx, w, map[string]any{"boot_mode": "uefi"})
				stub = w.agentHeartbeat(ctx, n.UUID, backing, nil)
				Eventually(w.e.provisionState(ctx, n.UUID), 2*time.Minute).Should(Equal(states.Active))
				params, _ := stub.command()["params"].(map[string]any)
				Expect(params).To(HaveKeyWithValue("efi_system_part_uuid", MatchRegexp(`^[0-9A-F]{4}-[0-9A-F]{4}$`)))
				disk, err := os.ReadFile(backing)
				Expect(err).NotTo(HaveOccurred())
				Expect(string(disk[1<<20:1<<20+512])).To(ContainSubstring("efi-part"), "the ESP comes first, labelled efi-part")

				By("failing the deploy with the agent's reason")
				w.bootloaderFailure = "boot loader install on /dev/sda failed: the image holds no GRUB; the instance cannot boot from its disk; " + wayOut
				n, backing = localNode(ctx, w, nil)
				w.agentHeartbeat(ctx, n.UUID, backing, nil)
				Eventually(w.e.provisionState(ctx, n.UUID), 2*time.Minute).Should(Equal(states.DeployFail))
				Eventually(w.e.reservation(ctx, n.UUID)).Should(BeNil())
				Expect(str(w.e.node(ctx, n.UUID).LastError)).To(Equal("Failed to install a bootloader when deploying node " + n.UUID +
					". Error: " + w.bootloaderFailure))
				Expect(w.e.hwPower(n.UUID)).NotTo(Equal(states.PowerOn))
			})
		})
	}
})
