package bootiso_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/bootiso"
	"github.com/ferricbm/ferric/deploy/tooltest"
)

// OVMF's UEFI firmware (Debian ovmf): code, and the variable store template
// each machine gets a copy of.
const (
	ovmfCode = "/usr/share/OVMF/OVMF_CODE_4M.fd"
	ovmfVars = "/usr/share/OVMF/OVMF_VARS_4M.fd"
)

// startQEMU boots a machine from iso under emulation (no KVM here) and stops
// it when the spec ends.
func startQEMU(iso string, extra ...string) {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(context.Background())
	args := append([]string{"-m", "256", "-display", "none", "-no-reboot", "-cdrom", iso, "-boot", "d"}, extra...)
	cmd := exec.CommandContext(ctx, "qemu-system-x86_64", args...)
	cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
	Expect(cmd.Start()).To(Succeed())
	DeferCleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
}

// vgaText reads the text-mode screen of the machine whose monitor listens on
// sock: 80x25 character/attribute pairs at 0xb8000, saved by the monitor.
func vgaText(sock, dump string) string {
	conn, err := net.DialTimeout("unix", sock, time.Second)
	if err != nil {
		return ""
	}
	defer conn.Close()
	_ = os.Remove(dump)
	if _, err := fmt.Fprintf(conn, "pmemsave 0xb8000 4000 %q\n", dump); err != nil {
		return ""
	}
	// The monitor answers with a prompt once the command ran.
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf, seen := make([]byte, 4096), ""
	for strings.Count(seen, "(qemu)") < 2 {
		n, err := conn.Read(buf)
		if err != nil {
			break
		}
		seen += string(buf[:n])
	}
	mem, err := os.ReadFile(dump)
	if err != nil {
		return ""
	}
	var text strings.Builder
	for i := 0; i < len(mem); i += 2 {
		if i%160 == 0 {
			text.WriteByte('\n')
		}
		text.WriteByte(mem[i])
	}
	return text.String()
}

var _ = Describe("booting the ISOs on emulated firmware", func() {
	var dir, kernel, ramdisk, iso string
	BeforeEach(func() {
		Expect(tooltest.Install(context.Background(), map[string]string{"/usr/bin/qemu-system-x86_64": "qemu-system-x86", ovmfCode: "ovmf"})).To(Succeed())
		dir = GinkgoT().TempDir()
		// Not kernels: the firmware and boot loaders get as far as loading them.
		kernel, _ = randomFile(dir, "kernel", 64<<10)
		ramdisk, _ = randomFile(dir, "ramdisk", 64<<10)
		iso = filepath.Join(dir, "deploy.iso")
		Expect(bootiso.BuildDeployISO(context.Background(), iso, bootiso.DeployISO{Kernel: kernel, Ramdisk: ramdisk})).To(Succeed())
	})

	It("boots isolinux under SeaBIOS, which loads the kernel and ramdisk", func() {
		sock := filepath.Join(dir, "monitor.sock")
		startQEMU(iso, "-monitor", "unix:"+sock+",server=on,wait=off")
		Eventually(func() string { return vgaText(sock, filepath.Join(dir, "vga.bin")) }).
			WithTimeout(3 * time.Minute).WithPolling(time.Second).
			Should(And(ContainSubstring("ISOLINUX"), ContainSubstring("Loading /vmlinuz... ok"), ContainSubstring("Loading /initrd...ok")))
	})

	It("boots GRUB under OVMF, which reads the ISO's grub.cfg and loads the kernel", func() {
		vars := filepath.Join(dir, "vars.fd")
		data, err := os.ReadFile(ovmfVars)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(vars, data, 0o644)).To(Succeed())
		serial := filepath.Join(dir, "serial.log")
		startQEMU(iso, "-machine", "q35", "-serial", "file:"+serial,
			"-drive", "if=pflash,format=raw,readonly=on,file="+ovmfCode, "-drive", "if=pflash,format=raw,file="+vars)
		Eventually(func() string { out, _ := os.ReadFile(serial); return string(out) }).
			WithTimeout(3 * time.Minute).WithPolling(time.Second).
			// The menu entry of our grub.cfg, then GRUB's linux command
			// refusing the placeholder kernel it read.
			Should(And(ContainSubstring("boot_partition"), ContainSubstring("invalid magic number")))
	})
})
