package bootloader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// WayOut ends every install failure: without a boot loader the deployed
// disk cannot boot, and these are the deploys that need none.
const WayOut = "the instance cannot boot from its disk; deploy it with boot_option=netboot, or use a whole-disk image"

// ErrNoGRUB is an image without grub-install or grub2-install: there is no
// boot loader of its own to install.
var ErrNoGRUB = errors.New("the image holds no GRUB (neither grub-install nor grub2-install)")

// Request says where to install.
type Request struct {
	// Disk is the disk the image was written to: a block device, or a
	// disk image file.
	Disk string
	// RootUUID is the root filesystem's UUID or the root partition's
	// PARTUUID; empty means the last partition.
	RootUUID string
	// ESPUUID is the EFI system partition's FAT volume ID or PARTUUID.
	// Given, the install is for UEFI.
	ESPUUID string
	// UEFI asks for a UEFI install without an ESPUUID: the ESP is the
	// partition labelled efi-part.
	UEFI bool
}

// Result is what was installed.
type Result struct {
	// Target is GRUB's platform: i386-pc or x86_64-efi.
	Target string
	// Root and ESP are the partitions used (ESP empty for BIOS).
	Root, ESP Partition
	// Configured: the image's grub-mkconfig wrote its grub.cfg.
	Configured bool
}

// Install runs the image's own grub-install (and grub-mkconfig when it
// has one) in a chroot of the root filesystem: for BIOS onto the disk's
// MBR, for UEFI into the ESP mounted at /boot/efi. Everything mounted or
// attached is released again, whatever happens. Errors end with WayOut.
func Install(ctx context.Context, r Request) (Result, error) {
	res, err := install(ctx, r)
	// The loop device is gone; what it wrote may still sit in the page
	// cache of the disk, and the ramdisk powers off next.
	syscall.Sync()
	if err != nil {
		return res, fmt.Errorf("boot loader install on %s failed: %w; %s", r.Disk, err, WayOut)
	}
	return res, nil
}

func install(ctx context.Context, r Request) (res Result, err error) {
	uefi := r.UEFI || r.ESPUUID != ""
	res.Target = "i386-pc"
	if uefi {
		res.Target = "x86_64-efi"
	}
	loop, err := attach(ctx, r.Disk)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, detach(loop)) }()
	parts, err := probe(ctx, loop)
	if err != nil {
		return res, err
	}
	if res.Root, err = parts.Root(r.RootUUID); err != nil {
		return res, err
	}
	if uefi {
		if res.ESP, err = parts.ESP(r.ESPUUID); err != nil {
			return res, err
		}
	}
	dir, err := os.MkdirTemp("", "ferric-root-")
	if err != nil {
		return res, err
	}
	var m mounts
	defer func() {
		err = errors.Join(err, m.release())
		if rmErr := os.Remove(dir); rmErr != nil && err == nil {
			err = rmErr
		}
	}()
	if err := m.mount(ctx, dir, res.Root.Device); err != nil {
		return res, fmt.Errorf("mount the root partition %s: %w", res.Root.Device, err)
	}
	grubInstall, grubMkconfig, cfg := findGRUB(dir)
	if grubInstall == "" {
		return res, ErrNoGRUB
	}
	for _, d := range []string{"/dev", "/proc", "/sys"} {
		at, err := mountPoint(dir, d)
		if err != nil {
			return res, err
		}
		if err := m.mount(ctx, at, "--bind", d); err != nil {
			return res, fmt.Errorf("bind-mount %s into the root filesystem: %w", d, err)
		}
	}
	args := []string{dir, grubInstall, "--target=" + res.Target}
	var efiStage string
	if uefi {
		if efiStage, err = stageESP(ctx, &m, dir, res.ESP.Device); err != nil {
			return res, err
		}
		// --removable puts GRUB at the fallback path firmware boots
		// without an NVRAM entry, which the ramdisk cannot be sure to
		// write.
		args = append(args, "--efi-directory=/boot/efi", "--removable", "--no-nvram")
	} else {
		args = append(args, loop)
	}
	if _, err := run(ctx, "chroot", args...); err != nil {
		return res, err
	}
	if uefi {
		if err := copyToESP(ctx, efiStage, res.ESP.Device); err != nil {
			return res, err
		}
	}
	if grubMkconfig != "" {
		if _, err := run(ctx, "chroot", dir, grubMkconfig, "-o", cfg); err != nil {
			return res, err
		}
		res.Configured = true
	}
	return res, nil
}

// stageESP mounts an empty tmpfs at /boot/efi in the root for grub-install
// to write the ESP's files into, and returns where it is. The ESP itself is
// never mounted: ramdisk kernels without the vfat module (this one has
// none) could not, and copying the staged tree with mtools (copyToESP)
// needs nothing of the kernel, so one way serves every ramdisk.
// grub-install refuses an EFI directory whose device is not FAT, and finds
// that device as the mount's source in /proc/self/mountinfo: the tmpfs is
// mounted with the ESP as its source, which tmpfs ignores, so the check
// probes the partition the files go to.
func stageESP(ctx context.Context, m *mounts, root, esp string) (string, error) {
	at, err := mountPoint(root, "/boot/efi")
	if err != nil {
		return "", err
	}
	if err := m.mount(ctx, at, "-t", "tmpfs", "-o", "mode=0755", esp); err != nil {
		return "", fmt.Errorf("stage the EFI system partition %s: %w", esp, err)
	}
	return at, nil
}

// copyToESP copies what grub-install staged onto the FAT filesystem of the
// ESP, merging into its directories and replacing files of the same name.
func copyToESP(ctx context.Context, stage, esp string) error {
	entries, err := os.ReadDir(stage)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return fmt.Errorf("grub-install put nothing on the EFI system partition %s", esp)
	}
	args := []string{"-s", "-o", "-Q", "-i", esp}
	for _, e := range entries {
		args = append(args, filepath.Join(stage, e.Name()))
	}
	// The ESP may come from any tool: skip mtools' check that the FAT
	// geometry matches what it would have made.
	if _, err := runEnv(ctx, []string{"MTOOLS_SKIP_CHECK=1"}, "mcopy", append(args, "::/")...); err != nil {
		return fmt.Errorf("copy GRUB onto the EFI system partition %s: %w", esp, err)
	}
	return nil
}

// findGRUB looks for the image's grub-install (or grub2-install) and
// matching mkconfig, returning their paths in the image and the grub.cfg
// the mkconfig writes. Symlinks count as present: they resolve inside the
// chroot, not here.
func findGRUB(root string) (install, mkconfig, cfg string) {
	exists := func(p string) bool {
		_, err := os.Lstat(filepath.Join(root, p))
		return err == nil
	}
	for _, name := range []string{"grub", "grub2"} {
		for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
			if install == "" && exists(filepath.Join(dir, name+"-install")) {
				install = filepath.Join(dir, name+"-install")
			}
		}
		if install == "" {
			continue
		}
		for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
			if exists(filepath.Join(dir, name+"-mkconfig")) {
				return install, filepath.Join(dir, name+"-mkconfig"), "/boot/" + name + "/grub.cfg"
			}
		}
		return install, "", ""
	}
	return "", "", ""
}

// attach makes the disk a loop device with its partitions, so that a
// file and a block device (whose partitions this kernel may not know
// since the conductor wrote them over iSCSI) are handled alike.
func attach(ctx context.Context, disk string) (string, error) {
	out, err := run(ctx, "losetup", "--find", "--show", "--partscan", disk)
	if err != nil {
		return "", err
	}
	loop := strings.TrimSpace(out)
	names, err := partitionNames(loop)
	if err == nil && len(names) == 0 {
		// A kernel without the table's partition parser scans nothing;
		// partx reads the table itself and adds the partitions.
		_, err = run(ctx, "partx", "--add", loop)
	}
	if err != nil {
		return "", errors.Join(err, detach(loop))
	}
	return loop, nil
}

func detach(loop string) error {
	_, err := run(context.Background(), "losetup", "--detach", loop)
	return err
}

// partitionNames lists the loop device's partitions from sysfs, in
// partition-number order.
func partitionNames(loop string) ([]string, error) {
	base := filepath.Base(loop)
	entries, err := os.ReadDir(filepath.Join("/sys/block", base))
	if err != nil {
		return nil, fmt.Errorf("partitions of %s: %w", loop, err)
	}
	number := map[string]int{}
	var names []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), base+"p") {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/sys/block", base, e.Name(), "partition"))
		if err != nil {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			continue
		}
		number[e.Name()] = n
		names = append(names, e.Name())
	}
	sort.Slice(names, func(i, j int) bool { return number[names[i]] < number[names[j]] })
	return names, nil
}

// probe reads every partition of the loop device with blkid, waiting
// briefly for device nodes udev may still be creating.
func probe(ctx context.Context, loop string) (Partitions, error) {
	names, err := partitionNames(loop)
	if err != nil {
		return nil, err
	}
	var parts Partitions
	for i, name := range names {
		p := Partition{Device: "/dev/" + name, Number: i + 1}
		if err := waitFor(ctx, p.Device); err != nil {
			return nil, err
		}
		out, err := run(ctx, "blkid", "-p", "-o", "export", p.Device)
		var ee *exec.ExitError
		if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 2) {
			return nil, err
		}
		parseBlkid(&p, out)
		parts = append(parts, p)
	}
	return parts, nil
}

func waitFor(ctx context.Context, dev string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(dev); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("partition device: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// mountPoint returns the directory rel inside the mounted image at root,
// creating what is missing. The image is the tenant's: a symbolic link on
// the way would resolve against the ramdisk's own filesystem and have
// /dev or the ESP mounted over one of its directories, so links are
// refused.
func mountPoint(root, rel string) (string, error) {
	cur := root
	for _, name := range strings.Split(strings.Trim(rel, "/"), "/") {
		cur = filepath.Join(cur, name)
		fi, err := os.Lstat(cur)
		switch {
		case errors.Is(err, os.ErrNotExist):
			if err := os.Mkdir(cur, 0o755); err != nil {
				return "", err
			}
		case err != nil:
			return "", err
		case fi.Mode()&os.ModeSymlink != 0:
			return "", fmt.Errorf("%s in the image is a symbolic link; refusing to mount over it", rel)
		case !fi.IsDir():
			return "", fmt.Errorf("%s in the image is not a directory", rel)
		}
	}
	return cur, nil
}

// mounts are the mount points made so far, released in reverse order.
type mounts []string

func (m *mounts) mount(ctx context.Context, at string, args ...string) error {
	if _, err := run(ctx, "mount", append(args, at)...); err != nil {
		return err
	}
	*m = append(*m, at)
	return nil
}

func (m *mounts) release() error {
	var errs []error
	for i := len(*m) - 1; i >= 0; i-- {
		if _, err := run(context.Background(), "umount", (*m)[i]); err != nil {
			errs = append(errs, err)
		}
	}
	*m = nil
	return errors.Join(errs...)
}

// run runs a command; its error carries the command and its output.
func run(ctx context.Context, name string, args ...string) (string, error) {
	return runEnv(ctx, nil, name, args...)
}

// runEnv is run with env added to the ramdisk's environment.
func runEnv(ctx context.Context, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		return stdout.String(), &commandError{cmd: name + " " + strings.Join(args, " "), msg: msg, err: err}
	}
	return stdout.String(), nil
}

type commandError struct {
	cmd, msg string
	err      error
}

func (e *commandError) Error() string {
	if e.msg == "" {
		return fmt.Sprintf("%s: %v", e.cmd, e.err)
	}
	return fmt.Sprintf("%s: %v: %s", e.cmd, e.err, e.msg)
}

func (e *commandError) Unwrap() error { return e.err }
