package agent_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/agent"
	"github.com/ferricbm/ferric/deploy/bootloader/grubroot"
	"github.com/ferricbm/ferric/deploy/iscsi"
)

// sendDone is what the conductor does when the deploy is written: connect to the
// ramdisk's port 10000, send msg, close.
func sendDone(addr string, msg []byte) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write(msg)
	return err
}

var _ = Describe("callback mode (bash ramdisk contract)", func() {
	var (
		api        *fakeIronic
		cfg        agent.Config
		portal     string
		poweredOff chan struct{}
		exited     chan struct{} // closed when RunCallback has returned, with its error in runErr
		runErr     error
	)
	const key = "Xw9ACMWvQ2ZC8zq6t1bKj0pYfE3nLrUo"
	iqn := "iqn.2008-10.org.openstack:1be26c0b-03f2-4d2e-ae87-c02d7f33c123"

	BeforeEach(func() {
		api = newFakeIronic()
		dir := GinkgoT().TempDir()
		portal = freeAddr()
		poweredOff = make(chan struct{})
		cfg = agent.Config{
			Params: agent.ParseCmdline(fmt.Sprintf("nofb nomodeset vga=normal deployment_id=%s deployment_key=%s "+
				"iscsi_target_iqn=%s ironic_api_url=%s disk=cciss/c0d0,sda,hda,vda boot_option=netboot boot_mode=bios "+
				"coreos.configdrive=0 ipa-driver-name=ipmi", api.nodeUUID, key, iqn, api.URL)),
			Disks:           []string{randomDisk(dir, "sda.img", 4<<20)},
			Listen:          freeAddr(),
			Portal:          portal,
			TgtdControlPort: controlPort(),
			TgtdLog:         filepath.Join(dir, "tgtd.log"),
			DoneListen:      freeAddr(),
			AuthToken:       "keystone-token",
			PowerOff:        func(context.Context) error { close(poweredOff); return nil },
			LookupBackoff:   10 * time.Millisecond,
			Log:             testLogger(),
		}
		Expect(cfg.Params.Mode()).To(Equal(agent.ModeCallback))
		exited = make(chan struct{})
	})

	run := func() {
		a, err := agent.New(cfg)
		Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			runErr = a.RunCallback(ctx)
			close(exited)
		}()
		DeferCleanup(func() {
			cancel()
			Eventually(exited).WithTimeout(30 * time.Second).Should(BeClosed())
		})
	}

	It("exports the disk, passes the deploy info, and on done releases the disk and powers off", func() {
		api.passthruQueryOnly = true
		run()
		var req request
		Eventually(api.passthru).WithTimeout(30 * time.Second).Should(Receive(&req))
		_, port, _ := net.SplitHostPort(portal)
		Expect(req.Method).To(Equal("POST"))
		Expect(req.Path).To(Equal("/v1/nodes/" + api.nodeUUID + "/vendor_passthru"))
		Expect(req.Query["method"]).To(Equal([]string{"pass_deploy_info"}))
		Expect(req.AuthToken).To(Equal("keystone-token"))
		user, _ := req.Body["chap_username"].(string)
		secret, _ := req.Body["chap_secret"].(string)
		Expect(user).To(MatchRegexp(`^ferric-[A-Za-z0-9]{12}$`))
		Expect(secret).To(MatchRegexp(`^[A-Za-z0-9]{24}$`))
		Expect(req.Body).To(Equal(map[string]any{"address": "127.0.0.1", "key": key, "iqn": iqn, "port": port,
			"lun": "1", "error": "", "chap_username": user, "chap_secret": secret}))
		// The path form was tried first.
		Expect(api.calls("/v1/nodes/" + api.nodeUUID + "/vendor_passthru/pass_deploy_info")).To(HaveLen(1))

		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		found, err := iscsi.Discover(ctx, portal, iscsi.Options{})
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(ConsistOf(HaveField("IQN", iqn)))
		_, err = iscsi.Dial(ctx, portal, iqn, iscsi.Options{})
		Expect(err).To(HaveOccurred(), "the export admits only the account sent with the callback")
		s, err := iscsi.Dial(ctx, portal, iqn, iscsi.Options{CHAPUser: user, CHAPSecret: secret})
		Expect(err).NotTo(HaveOccurred())
		Expect(s.FirstDisk(ctx)).To(Equal(uint64(1)))
		Expect(s.Close()).To(Succeed())
		Consistently(poweredOff, 100*time.Millisecond).ShouldNot(BeClosed())

		Expect(sendDone(cfg.DoneListen, agent.DoneMessage(secret))).To(Succeed())
		Eventually(exited).WithTimeout(30 * time.Second).Should(BeClosed())
		Expect(runErr).NotTo(HaveOccurred())
		Expect(poweredOff).To(BeClosed())
		_, err = iscsi.Discover(ctx, portal, iscsi.Options{})
		Expect(err).To(HaveOccurred())
		Expect(filepath.Join("/var/run/tgtd", "socket."+strconv.Itoa(cfg.TgtdControlPort))).NotTo(BeAnExistingFile())
	})

	It("ignores connections that do not say done with the secret it sent only to the API, not the TFTP-served deployment key", func() {
		run()
		var req request
		Eventually(api.passthru).WithTimeout(30 * time.Second).Should(Receive(&req))
		secret, _ := req.Body["chap_secret"].(string)
		Expect(secret).NotTo(BeEmpty())
		for _, msg := range []string{"hello", "done", "done wrong-key", "done " + secret[:10], "done " + key} {
			Expect(sendDone(cfg.DoneListen, []byte(msg))).To(Succeed())
		}
		Consistently(exited, 200*time.Millisecond).ShouldNot(BeClosed())
		Expect(sendDone(cfg.DoneListen, agent.DoneMessage(secret))).To(Succeed())
		Eventually(exited).WithTimeout(30 * time.Second).Should(BeClosed())
		Expect(runErr).NotTo(HaveOccurred())
	})

	It("reports a failed export in the error field and exits with it", func() {
		cfg.Disks = []string{"/nonexistent/disk"}
		run()
		var req request
		Eventually(api.passthru).WithTimeout(30 * time.Second).Should(Receive(&req))
		Expect(req.Path).To(Equal("/v1/nodes/" + api.nodeUUID + "/vendor_passthru/pass_deploy_info"))
		Expect(req.Body["error"]).To(ContainSubstring("/nonexistent/disk"))
		Eventually(exited).WithTimeout(30 * time.Second).Should(BeClosed())
		Expect(runErr).To(HaveOccurred())
		Expect(poweredOff).NotTo(BeClosed())
	})

	// bootloaderCallback runs a boot_option=local deploy up to the second
	// callback and returns its body; the ramdisk then waits for done again.
	bootloaderCallback := func() (first, second map[string]any) {
		GinkgoHelper()
		cfg.Params.BootOption = "local"
		run()
		var deployInfo request
		Eventually(api.passthru).WithTimeout(30 * time.Second).Should(Receive(&deployInfo))
		secret, _ := deployInfo.Body["chap_secret"].(string)
		Expect(sendDone(cfg.DoneListen, agent.DoneMessage(secret))).To(Succeed())
		var req request
		Eventually(api.passthru).WithTimeout(time.Minute).Should(Receive(&req))
		Expect(req.Path).To(HaveSuffix("/vendor_passthru/pass_bootloader_install_info"))
		Consistently(poweredOff, 100*time.Millisecond).ShouldNot(BeClosed())
		Expect(sendDone(cfg.DoneListen, agent.DoneMessage(secret))).To(Succeed())
		Eventually(exited).WithTimeout(30 * time.Second).Should(BeClosed())
		Expect(runErr).NotTo(HaveOccurred())
		Expect(poweredOff).To(BeClosed())
		return deployInfo.Body, req.Body
	}

	It("installs the image's GRUB for boot_option=local after done, reports it, and waits for done again", func() {
		dir := GinkgoT().TempDir()
		img := filepath.Join(dir, "root.raw")
		_, err := grubroot.Image(img, 48<<20, true)
		Expect(err).NotTo(HaveOccurred())
		cfg.Disks = []string{filepath.Join(dir, "sda.img")}
		Expect(grubroot.Disk(cfg.Disks[0], 64<<20, img)).To(Succeed())

		deployInfo, installInfo := bootloaderCallback()
		Expect(installInfo).To(Equal(map[string]any{"address": "127.0.0.1", "status": "SUCCEEDED", "key": key, "error": "",
			"chap_secret": deployInfo["chap_secret"]}), "the CHAP secret of the export proves the ramdisk is the one that called first")
		mbr, err := os.ReadFile(cfg.Disks[0])
		Expect(err).NotTo(HaveOccurred())
		Expect(bytes.Contains(mbr[:440], []byte("GRUB"))).To(BeTrue(), "GRUB's boot code is in the MBR")
	})

	It("reports FAILED, naming the way out, for boot_option=local when the disk holds no image it can install GRUB from", func() {
		_, installInfo := bootloaderCallback()
		Expect(installInfo).To(And(HaveKeyWithValue("status", "FAILED"), HaveKeyWithValue("key", key),
			HaveKeyWithValue("address", "127.0.0.1"),
			HaveKeyWithValue("error", And(ContainSubstring("boot_option=netboot"), ContainSubstring("whole-disk image")))))
	})
})

var _ = Describe("ParseCmdline", func() {
	It("reads Ironic's agent and bash ramdisk parameters from a PXE append line", func() {
		p := agent.ParseCmdline(`initrd=deploy_ramdisk selinux=0 ipa-api-url=http://10.0.0.1:6385/ ` +
			`ipa-driver-name=ilo deployment_id=abc deployment_key=k=ey iscsi_target_iqn=iqn.2008-10.org.openstack:abc ` +
			`ironic_api_url=http://10.0.0.1:6385 disk=cciss/c0d0,sda,hda,vda boot_option=local boot_mode=uefi ` +
			`root_device=size=100,model=Model%20X BOOTIF=01-52-54-00-AB-cd-ef ipa-agent-token=t`)
		Expect(p.APIURL).To(Equal("http://10.0.0.1:6385"))
		Expect(p.IronicAPIURL).To(Equal("http://10.0.0.1:6385"))
		Expect(p.DriverName).To(Equal("ilo"))
		Expect(p.DeploymentID).To(Equal("abc"))
		Expect(p.DeploymentKey).To(Equal("k=ey"))
		Expect(p.IQN).To(Equal("iqn.2008-10.org.openstack:abc"))
		Expect(p.Disks).To(Equal([]string{"cciss/c0d0", "sda", "hda", "vda"}))
		Expect(p.BootOption).To(Equal("local"))
		Expect(p.BootMode).To(Equal("uefi"))
		Expect(p.RootDevice).To(Equal(map[string]string{"size": "100", "model": "Model X"}))
		Expect(p.BootIf).To(Equal("52:54:00:ab:cd:ef"))
		Expect(p.AgentToken).To(Equal("t"))
		Expect(p.All).To(HaveKeyWithValue("selinux", "0"))
		Expect(p.Mode()).To(Equal(agent.ModeAgent))
		Expect(agent.ParseCmdline("ro quiet").Mode()).To(BeEmpty())
	})
})
