package pxe_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/driver/drivertest"
	"github.com/ferricbm/ferric/conductor/driver/fake"
	"github.com/ferricbm/ferric/conductor/driver/pxe"
	"github.com/ferricbm/ferric/conductor/vmedia/publish"
	"github.com/ferricbm/ferric/deploy/image"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/httpserver"
	"github.com/ferricbm/ferric/pkg/model"
)

var _ = Describe("pxe boot interface", func() {
	var (
		dir, tftp, httpRoot string
		boot                *pxe.Boot
		t                   *drivertest.Task
	)

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		tftp, httpRoot = filepath.Join(dir, "tftp"), filepath.Join(dir, "http")
		for _, name := range []string{"dk", "dr", "k", "r"} {
			Expect(os.WriteFile(filepath.Join(dir, name), []byte("file "+name), 0o644)).To(Succeed())
		}
		boot = pxe.New(pxe.Options{TFTPRoot: tftp, HTTPRoot: httpRoot, HTTPURL: "http://127.0.0.1:1/b", IPXE: true,
			AppendParams: "nofb", DefaultBootOption: "local", FileAllowedPaths: []string{dir}})
		reg, err := driver.NewRegistry([]string{fake.Name}, fake.New().HardwareType())
		Expect(err).NotTo(HaveOccurred())
		node := &model.Node{UUID: "1be26c0b-03f2-4d2e-ae87-c02d7f33c123", Driver: fake.Name,
			DriverInfo:         model.JSONObject{"deploy_kernel": filepath.Join(dir, "dk"), "deploy_ramdisk": "file://" + filepath.Join(dir, "dr")},
			InstanceInfo:       model.JSONObject{},
			DriverInternalInfo: model.JSONObject{}}
		drv, err := reg.Load(node)
		Expect(err).NotTo(HaveOccurred())
		t = drivertest.New(node).WithPorts([]model.Port{
			{Address: "52:54:00:AA:BB:01", PXEEnabled: true},
			{Address: "52:54:00:aa:bb:02", PXEEnabled: false},
		})
		t.Drv = drv
	})

	Describe("Validate", func() {
		It("accepts a node with deploy images and a PXE port", func(ctx SpecContext) {
			Expect(boot.Validate(ctx, t)).To(Succeed())
		})

		It("names the missing deploy images as Ironic does", func(ctx SpecContext) {
			t.Node().DriverInfo = model.JSONObject{}
			err := boot.Validate(ctx, t)
			Expect(errs.Is(err, errs.KindMissingParameterValue)).To(BeTrue())
			Expect(errs.Message(err)).To(Equal("Cannot validate PXE bootloader. Some parameters were missing in node's driver_info. Missing are: ['deploy_kernel', 'deploy_ramdisk']"))
		})

		It("refuses image references that are neither paths nor file/http URLs", func(ctx SpecContext) {
			t.Node().DriverInfo["deploy_kernel"] = "glance://abc"
			Expect(errs.Is(boot.Validate(ctx, t), errs.KindInvalidParameterValue)).To(BeTrue())
		})

		DescribeTable("refuses conductor files outside file_url_allowed_paths",
			func(ctx SpecContext, key string, ref func() string) {
				t.Node().DriverInfo[key] = ref()
				err := boot.Validate(ctx, t)
				Expect(errs.Is(err, errs.KindInvalidParameterValue)).To(BeTrue(), "%v", err)
				Expect(errs.Message(err)).To(ContainSubstring("driver_info " + key))
				Expect(errs.Message(err)).To(ContainSubstring("file_url_allowed_paths"))
			},
			Entry("a secret by path", "deploy_kernel", func() string { return "/etc/shadow" }),
			Entry("the process environment by URL", "deploy_ramdisk", func() string { return "file:///proc/self/environ" }),
			Entry("a way out through ..", "deploy_kernel", func() string { return dir + "/../../../etc/passwd" }),
			Entry("a link in an allowed directory to a file outside", "deploy_kernel", func() string {
				outside := filepath.Join(GinkgoT().TempDir(), "secret")
				Expect(os.WriteFile(outside, []byte("password"), 0o600)).To(Succeed())
				link := filepath.Join(dir, "kernel-link")
				Expect(os.Symlink(outside, link)).To(Succeed())
				return "file://" + link
			}),
		)

		It("refuses a deploy image at a literal loopback, link-local or private address outside the download allow-list", func(ctx SpecContext) {
			for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "http://127.0.0.1:3306/", "http://[::1]/k", "https://10.1.2.3/k"} {
				t.Node().DriverInfo["deploy_kernel"] = u
				err := boot.Validate(ctx, t)
				Expect(errs.Is(err, errs.KindInvalidParameterValue)).To(BeTrue(), "%s: %v", u, err)
				Expect(errs.Message(err)).To(ContainSubstring("download destination refused"))
			}
			t.Node().DriverInfo["deploy_kernel"] = "http://198.51.100.7/k"
			Expect(boot.Validate(ctx, t)).To(Succeed())
		})

		It("refuses every local file when no directory is allowed", func(ctx SpecContext) {
			strict := pxe.New(pxe.Options{TFTPRoot: tftp, HTTPRoot: httpRoot})
			err := strict.Validate(ctx, t)
			Expect(errs.Is(err, errs.KindInvalidParameterValue)).To(BeTrue(), "%v", err)
			Expect(errs.Message(err)).To(ContainSubstring("no directory is allowed"))
		})

		It("refuses instance kernels outside file_url_allowed_paths for a netbooted image", func(ctx SpecContext) {
			t.Node().InstanceInfo = model.JSONObject{"image_source": "http://x/img", "kernel": "/etc/shadow",
				"ramdisk": filepath.Join(dir, "r"), "capabilities": "boot_option:netboot"}
			err := boot.Validate(ctx, t)
			Expect(errs.Message(err)).To(ContainSubstring("instance_info kernel: local file not allowed: /etc/shadow"))
		})

		It("needs a PXE-enabled port", func(ctx SpecContext) {
			t.PortList = t.PortList[1:]
			err := boot.Validate(ctx, t)
			Expect(errs.Message(err)).To(Equal(fmt.Sprintf("Node %s does not have any port associated with it.", t.Node().UUID)))
		})

		It("needs the instance kernel and ramdisk to netboot a partition image", func(ctx SpecContext) {
			t.Node().InstanceInfo = model.JSONObject{"image_source": "http://x/img", "kernel": "http://x/k",
				"capabilities": "boot_option:netboot"}
			err := boot.Validate(ctx, t)
			Expect(errs.Message(err)).To(ContainSubstring("instance_info. Missing are: ['ramdisk']"))
		})
	})

	It("writes PXELINUX and iPXE configurations for the PXE ports only, and removes them again", func(ctx SpecContext) {
		Expect(boot.PrepareRamdisk(ctx, t, map[string]any{"b": "2", "a": 1})).To(Succeed())
		link := filepath.Join(tftp, "pxelinux.cfg", "01-52-54-00-aa-bb-01")
		cfg, err := os.ReadFile(link)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(cfg)).To(Equal(fmt.Sprintf("default deploy\n\nlabel deploy\nkernel %[1]s/deploy_kernel\n"+
			"append initrd=%[1]s/deploy_ramdisk a=1 b=2 nofb\nipappend 3\n", t.Node().UUID)))
		Expect(filepath.Join(tftp, "pxelinux.cfg", "01-52-54-00-aa-bb-02")).NotTo(BeAnExistingFile())
		Expect(os.ReadFile(filepath.Join(tftp, t.Node().UUID, "deploy_kernel"))).To(Equal([]byte("file dk")))
		Expect(os.ReadFile(filepath.Join(httpRoot, t.Node().UUID, "deploy_ramdisk"))).To(Equal([]byte("file dr")))
		ipxe, err := os.ReadFile(filepath.Join(httpRoot, "pxelinux.cfg", "52:54:00:aa:bb:01"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(ipxe)).To(ContainSubstring("kernel http://127.0.0.1:1/b/" + t.Node().UUID + "/deploy_kernel a=1 b=2 nofb"))
		chain, err := os.ReadFile(filepath.Join(httpRoot, "boot.ipxe"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(chain)).To(ContainSubstring("chain --autofree http://127.0.0.1:1/b/pxelinux.cfg/${mac}"))

		By("removing links of ports deleted since")
		t.PortList = nil
		Expect(boot.CleanUpRamdisk(ctx, t)).To(Succeed())
		Expect(link).NotTo(BeAnExistingFile())
		Expect(filepath.Join(httpRoot, "pxelinux.cfg", "52:54:00:aa:bb:01")).NotTo(BeAnExistingFile())
		Expect(filepath.Join(tftp, t.Node().UUID, "deploy_kernel")).NotTo(BeAnExistingFile())
		Expect(boot.CleanUpInstance(ctx, t)).To(Succeed())
		Expect(filepath.Join(tftp, t.Node().UUID)).NotTo(BeADirectory())
	})

	It("writes boot files that other users cannot read", func(ctx SpecContext) {
		Expect(boot.PrepareRamdisk(ctx, t, nil)).To(Succeed())
		for _, root := range []string{tftp, httpRoot} {
			var seen int
			Expect(filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
				Expect(err).NotTo(HaveOccurred())
				info, err := os.Lstat(path)
				Expect(err).NotTo(HaveOccurred())
				if path != root && info.Mode()&os.ModeSymlink == 0 {
					seen++
					Expect(info.Mode().Perm()&0o007).To(BeZero(), "%s is %s", path, info.Mode())
				}
				return nil
			})).To(Succeed())
			Expect(seen).To(BeNumerically(">=", 4), "the node's directory, kernel, ramdisk and config under %s", root)
		}
	})

	It("copies no conductor file outside the allowed directories, even without validation", func(ctx SpecContext) {
		t.Node().DriverInfo["deploy_kernel"] = "/etc/passwd"
		err := boot.PrepareRamdisk(ctx, t, nil)
		Expect(err).To(MatchError(ContainSubstring("local file not allowed: /etc/passwd")))
		Expect(filepath.Join(tftp, t.Node().UUID, "deploy_kernel")).NotTo(BeAnExistingFile())
	})

	Describe("boot file size limit", func() {
		var files *httptest.Server
		BeforeEach(func() {
			files = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/unsized" {
					w.(http.Flusher).Flush() // chunked: no Content-Length
				} else {
					w.Header().Set("Content-Length", "4096")
				}
				_, _ = w.Write(make([]byte, 4096))
			}))
			DeferCleanup(files.Close)
			cfg := config.Defaults()
			cfg.Conductor.ImageDownloadAllowedNetworks = []string{"127.0.0.0/8"}
			boot = pxe.New(pxe.Options{TFTPRoot: tftp, HTTPRoot: httpRoot, FileAllowedPaths: []string{dir}, MaxFileSize: 1024,
				Downloads: pxe.OptionsFrom(cfg, nil).Downloads})
		})

		It("downloads nothing from loopback, link-local or private addresses outside [conductor] image_download_allowed_networks", func(ctx SpecContext) {
			strict := pxe.New(pxe.Options{TFTPRoot: tftp, HTTPRoot: httpRoot, MaxFileSize: 1 << 20})
			for _, u := range []string{files.URL + "/sized", "http://169.254.169.254/latest/meta-data/", "http://10.0.0.1:3306/"} {
				t.Node().DriverInfo["deploy_kernel"] = u
				err := strict.PrepareRamdisk(ctx, t, nil)
				Expect(errors.Is(err, image.ErrDestinationRefused)).To(BeTrue(), "%s: %v", u, err)
				Expect(os.ReadDir(filepath.Join(tftp, t.Node().UUID))).To(BeEmpty())
			}
		})

		It("refuses a kernel announced larger than the limit and writes nothing", func(ctx SpecContext) {
			t.Node().DriverInfo["deploy_kernel"] = files.URL + "/sized"
			err := boot.PrepareRamdisk(ctx, t, nil)
			Expect(errors.Is(err, image.ErrTooLarge)).To(BeTrue(), "%v", err)
			Expect(err.Error()).To(ContainSubstring("4096 bytes, more than the 1024 allowed"))
			Expect(os.ReadDir(filepath.Join(tftp, t.Node().UUID))).To(BeEmpty())
		})

		It("stops a body that gave no size once it passes the limit, and a local file too", func(ctx SpecContext) {
			t.Node().DriverInfo["deploy_kernel"] = files.URL + "/unsized"
			Expect(errors.Is(boot.PrepareRamdisk(ctx, t, nil), image.ErrTooLarge)).To(BeTrue())
			Expect(os.ReadDir(filepath.Join(tftp, t.Node().UUID))).To(BeEmpty())

			Expect(os.WriteFile(filepath.Join(dir, "big"), make([]byte, 1025), 0o644)).To(Succeed())
			t.Node().DriverInfo["deploy_kernel"] = filepath.Join(dir, "big")
			Expect(errors.Is(boot.PrepareRamdisk(ctx, t, nil), image.ErrTooLarge)).To(BeTrue())
			Expect(os.ReadDir(filepath.Join(tftp, t.Node().UUID))).To(BeEmpty())
		})
	})

	It("refuses kernel parameters with white space", func(ctx SpecContext) {
		Expect(boot.PrepareRamdisk(ctx, t, map[string]any{"a": "x y"})).To(MatchError(ContainSubstring("white space")))
	})

	It("boots a netbooted partition image from its kernel with root=UUID and sets PXE boot", func(ctx SpecContext) {
		t.Node().InstanceInfo = model.JSONObject{"kernel": filepath.Join(dir, "k"), "ramdisk": filepath.Join(dir, "r"),
			"capabilities": map[string]any{"boot_option": "netboot"}}
		t.Node().DriverInternalInfo["root_uuid_or_disk_id"] = "0f0e0d0c-1234"
		Expect(boot.PrepareRamdisk(ctx, t, nil)).To(Succeed())
		Expect(boot.PrepareInstance(ctx, t)).To(Succeed())
		cfg, err := os.ReadFile(filepath.Join(tftp, "pxelinux.cfg", "01-52-54-00-aa-bb-01"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(cfg)).To(ContainSubstring("default boot_partition"))
		Expect(string(cfg)).To(ContainSubstring("append initrd=" + t.Node().UUID + "/ramdisk root=UUID=0f0e0d0c-1234 ro text nofb"))
		Expect(filepath.Join(tftp, t.Node().UUID, "deploy_kernel")).NotTo(BeAnExistingFile())
		bd, err := t.Drv.Management.GetBootDevice(ctx, t)
		Expect(err).NotTo(HaveOccurred())
		Expect(*bd.Device).To(Equal("pxe"))
		Expect(*bd.Persistent).To(BeTrue())
	})

	It("boots whole-disk and local-boot instances from disk, without PXE files", func(ctx SpecContext) {
		Expect(boot.PrepareRamdisk(ctx, t, nil)).To(Succeed())
		t.Node().DriverInternalInfo["is_whole_disk_image"] = true
		Expect(boot.PrepareInstance(ctx, t)).To(Succeed())
		Expect(filepath.Join(tftp, "pxelinux.cfg", "01-52-54-00-aa-bb-01")).NotTo(BeAnExistingFile())
		Expect(filepath.Join(tftp, t.Node().UUID)).NotTo(BeADirectory())
		bd, err := t.Drv.Management.GetBootDevice(ctx, t)
		Expect(err).NotTo(HaveOccurred())
		Expect(*bd.Device).To(Equal("disk"))
		Expect(*bd.Persistent).To(BeTrue())
	})

	It("serves the HTTP root while started", func(ctx SpecContext) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		addr := l.Addr().String()
		l.Close()
		srv := pxe.New(pxe.Options{TFTPRoot: tftp, HTTPRoot: httpRoot, HTTPURL: "http://" + addr + "/boot/"})
		Expect(os.MkdirAll(httpRoot, 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(httpRoot, "hello"), []byte("hi"), 0o644)).To(Succeed())
		Expect(srv.StartService(ctx)).To(Succeed())
		resp, err := http.Get("http://" + addr + "/boot/hello")
		Expect(err).NotTo(HaveOccurred())
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(string(body)).To(Equal("hi"))
		Expect(os.MkdirAll(filepath.Join(httpRoot, "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"), 0o755)).To(Succeed())
		for _, dir := range []string{"/boot/", "/boot", "/boot/1be26c0b-03f2-4d2e-ae87-c02d7f33c123/", "/boot/1be26c0b-03f2-4d2e-ae87-c02d7f33c123"} {
			resp, err := http.Get("http://" + addr + dir)
			Expect(err).NotTo(HaveOccurred())
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			Expect(resp.StatusCode).To(Equal(http.StatusNotFound), "a directory (%s) is not listed", dir)
			Expect(string(body)).NotTo(ContainSubstring("1be26c0b"))
			Expect(string(body)).NotTo(ContainSubstring("hello"))
		}
		Expect(srv.StopService(ctx)).To(Succeed())
		_, err = http.Get("http://" + addr + "/boot/hello")
		Expect(err).To(HaveOccurred())
	})

	Describe("virtual media on the boot file server", func() {
		var addr string
		BeforeEach(func() {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			Expect(err).NotTo(HaveOccurred())
			addr = l.Addr().String()
			l.Close()
		})
		get := func(u string) (int, string) {
			resp, err := http.Get(u)
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(body)
		}

		It("serves published media only through signed URLs, and reaps expired ones", func(ctx SpecContext) {
			base := "http://" + addr + "/boot"
			media, err := publish.NewWebServer(filepath.Join(httpRoot, "vmedia"), base)
			Expect(err).NotTo(HaveOccurred())
			srv := pxe.New(pxe.Options{TFTPRoot: tftp, HTTPRoot: httpRoot, HTTPURL: base, Media: media, ReapInterval: 100 * time.Millisecond})
			Expect(srv.StartService(ctx)).To(Succeed())
			DeferCleanup(srv.StopService)
			Expect(media.Publish(ctx, "image-a", strings.NewReader("deploy key"), 0)).To(Succeed())
			u, err := media.URL(ctx, "image-a", time.Minute)
			Expect(err).NotTo(HaveOccurred())

			status, body := get(u)
			Expect(status).To(Equal(http.StatusOK))
			Expect(body).To(Equal("deploy key"))
			status, body = get(base + "/vmedia/image-a")
			Expect(status).To(Equal(http.StatusForbidden))
			Expect(body).NotTo(ContainSubstring("deploy key"))
			status, _ = get(base + "//vmedia/image-a")
			Expect(status).NotTo(Equal(http.StatusOK))

			Expect(media.Publish(ctx, "image-b", strings.NewReader("short-lived"), time.Second)).To(Succeed())
			Eventually(filepath.Join).WithArguments(httpRoot, "vmedia", "image-b").WithTimeout(5 * time.Second).ShouldNot(BeAnExistingFile())
			Expect(filepath.Join(httpRoot, "vmedia", "image-a")).To(BeAnExistingFile())
		})

		It("refuses the media folder when no publisher guards it", func(ctx SpecContext) {
			base := "http://" + addr
			srv := pxe.New(pxe.Options{TFTPRoot: tftp, HTTPRoot: httpRoot, HTTPURL: base})
			Expect(os.MkdirAll(filepath.Join(httpRoot, "vmedia"), 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(httpRoot, "vmedia", "image-a"), []byte("deploy key"), 0o644)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(httpRoot, "hello"), []byte("hi"), 0o644)).To(Succeed())
			Expect(srv.StartService(ctx)).To(Succeed())
			DeferCleanup(srv.StopService)
			status, _ := get(base + "/hello")
			Expect(status).To(Equal(http.StatusOK))
			for _, p := range []string{"/vmedia/image-a", "/vmedia/", "/x/../vmedia/image-a"} {
				status, body := get(base + p)
				Expect(status).To(Equal(http.StatusNotFound), p)
				Expect(body).NotTo(ContainSubstring("deploy key"))
			}
		})
	})

	It("bounds the boot file server's clients as [deploy] configures", func() {
		cfg := config.Defaults()
		cfg.Deploy.HTTPReadTimeout, cfg.Deploy.HTTPWriteTimeout, cfg.Deploy.HTTPIdleTimeout = time.Second, 2*time.Second, 3*time.Second
		cfg.Deploy.HTTPMaxHeaderSize = 1024
		// Per write: images of many GiB must not hit a whole-response deadline.
		Expect(pxe.OptionsFrom(cfg, nil).Server).To(Equal(httpserver.Limits{ReadTimeout: time.Second, WriteTimeout: 2 * time.Second,
			PerWrite: true, IdleTimeout: 3 * time.Second, MaxHeaderBytes: 1024}))
	})
})
