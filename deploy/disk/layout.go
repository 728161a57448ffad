package disk

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/ferricbm/ferric/deploy/image"
)

const mib = 1 << 20

// Keys of PartitionResult.Partitions, the names Ironic's make_partitions
// gives them.
const (
	PartEFI         = "efi system partition"
	PartBIOSBoot    = "bios boot partition"
	PartPReP        = "PReP Boot partition"
	PartEphemeral   = "ephemeral"
	PartSwap        = "swap"
	PartConfigDrive = "configdrive"
	PartRoot        = "root"
)

// Sizes fixed by Ironic's [disk_utils] defaults.
const (
	efiSystemPartitionMB = 200
	biosBootPartitionMB  = 1
	prepPartitionMB      = 8
)

// PartitionOptions describe a partition-image deploy (instance_info and the
// node's capabilities, already validated and parsed).
type PartitionOptions struct {
	RootMB, SwapMB, EphemeralMB int64
	// EphemeralFormat is the mkfs type for the ephemeral partition
	// (default ext4).
	EphemeralFormat   string
	PreserveEphemeral bool
	BootOption        string // "local" or "netboot" (default)
	BootMode          string // "bios" (default) or "uefi"
	// DiskLabel is "msdos" or "gpt"; empty means gpt for uefi, msdos for
	// bios.
	DiskLabel string
	// CPUArch adds the PReP boot partition for ppc64 and ppc64le.
	CPUArch string
	// ConfigDrive is the decoded config drive (see DecodeConfigDrive).
	ConfigDrive []byte
	// TempDir holds the filesystems made with mkfs before they are
	// streamed (sparse files of the partition's size); default os.TempDir.
	TempDir string
	// Write tunes every stream written (ESP, config drive, root,
	// ephemeral); its Offset is ignored.
	Write Options
}

// PartitionResult is what Ironic's work_on_disk returns.
type PartitionResult struct {
	// RootUUID is the root filesystem's UUID when it is ext2/3/4, XFS or
	// Btrfs, else the root partition's PARTUUID.
	RootUUID string
	// EFISystemPartitionUUID is the ESP's FAT volume ID ("ABCD-1234"),
	// empty without an ESP.
	EFISystemPartitionUUID string
	DiskLabel              string
	Partitions             map[string]Partition
}

type plannedPart struct {
	key    string
	sizeMB int64
	mbr    byte
	gpt    string
	name   string
	boot   bool // the msdos active flag
}

func (o PartitionOptions) label() string {
	if o.DiskLabel != "" {
		return o.DiskLabel
	}
	if o.BootMode == "uefi" {
		return LabelGPT
	}
	return LabelMSDOS
}

// plan lists the partitions in Ironic's order: ESP, BIOS boot, PReP,
// ephemeral, swap, config drive, and root last so growroot can extend it.
func (o PartitionOptions) plan() ([]plannedPart, error) {
	label := o.label()
	if label != LabelGPT && label != LabelMSDOS {
		return nil, fmt.Errorf("disk label %q is neither msdos nor gpt", label)
	}
	if o.RootMB <= 0 {
		return nil, fmt.Errorf("root partition size must be positive, got %d MiB", o.RootMB)
	}
	if o.SwapMB < 0 || o.EphemeralMB < 0 {
		return nil, fmt.Errorf("swap and ephemeral sizes must not be negative")
	}
	local := o.BootOption == "local"
	var parts []plannedPart
	if o.BootMode == "uefi" && local {
		// parted's "boot" flag: the ESP type on GPT, active (plus the ESP
		// type, which UEFI firmware looks for) on msdos.
		parts = append(parts, plannedPart{PartEFI, efiSystemPartitionMB, mbrTypeESP, TypeEFISystem, "EFI System Partition", true})
	}
	if o.BootMode != "uefi" && local && label == LabelGPT {
		parts = append(parts, plannedPart{PartBIOSBoot, biosBootPartitionMB, 0, TypeBIOSBoot, "BIOS boot partition", false})
	}
	if strings.HasPrefix(o.CPUArch, "ppc64") {
		parts = append(parts, plannedPart{PartPReP, prepPartitionMB, mbrTypePReP, TypePReP, "PReP boot", false})
	}
	if o.EphemeralMB > 0 {
		parts = append(parts, plannedPart{PartEphemeral, o.EphemeralMB, mbrTypeLinux, TypeLinuxFS, "ephemeral", false})
	}
	if o.SwapMB > 0 {
		parts = append(parts, plannedPart{PartSwap, o.SwapMB, mbrTypeSwap, TypeLinuxSwap, "swap", false})
	}
	if len(o.ConfigDrive) > 0 {
		parts = append(parts, plannedPart{PartConfigDrive, (int64(len(o.ConfigDrive)) + mib - 1) / mib, mbrTypeLinux, TypeLinuxFS, "config-2", false})
	}
	parts = append(parts, plannedPart{PartRoot, o.RootMB, mbrTypeLinux, TypeLinuxFS, "root", o.BootMode != "uefi" && local && label == LabelMSDOS})
	if label == LabelMSDOS && len(parts) > 4 {
		return nil, fmt.Errorf("%d partitions requested but an msdos partition table holds 4; use disk_label gpt", len(parts))
	}
	return parts, nil
}

// WritePartitionImage partitions dst and writes img into its root partition,
// with the ESP, swap, ephemeral and config drive partitions the options ask
// for (Ironic's work_on_disk). With PreserveEphemeral the existing table
// must match the computed layout, and neither it nor the ephemeral
// filesystem is touched.
func WritePartitionImage(ctx context.Context, dst Target, img image.Image, o PartitionOptions) (*PartitionResult, error) {
	if err := checkSectorSize(dst); err != nil {
		return nil, err
	}
	plan, err := o.plan()
	if err != nil {
		return nil, err
	}
	imageMB := (img.VirtualSize() + mib - 1) / mib
	if imageMB > o.RootMB {
		return nil, fmt.Errorf("Root partition is too small for requested image. Image virtual size: %d MB, Root size: %d MB", imageMB, o.RootMB)
	}
	table := &Table{Label: o.label()}
	if table.Label == LabelGPT {
		table.DiskID = newGUID()
	} else {
		table.DiskID = newDiskSig()
	}
	start := int64(mib)
	for i, p := range plan {
		part := Partition{Number: i + 1, Start: start, Size: p.sizeMB * mib}
		if table.Label == LabelGPT {
			part.TypeGUID, part.GUID, part.Name = p.gpt, newGUID(), p.name
		} else {
			part.Type, part.Bootable = p.mbr, p.boot
		}
		table.Partitions = append(table.Partitions, part)
		start += part.Size
	}
	limit := dst.Size()
	if table.Label == LabelGPT {
		limit -= (1 + gptEntrySecs) * SectorSize
	}
	if start > limit {
		return nil, fmt.Errorf("disk of %d MiB is too small for the %d MiB of partitions requested", dst.Size()/mib, start/mib)
	}

	if o.PreserveEphemeral {
		if table, err = matchExisting(dst, table); err != nil {
			return nil, err
		}
	} else {
		if err := wipeMetadata(dst, table, o.Write.AssumeZeroed); err != nil {
			return nil, err
		}
		if table.Label == LabelGPT {
			err = writeGPT(dst, table)
		} else {
			err = writeMBR(dst, table)
		}
		if err != nil {
			return nil, err
		}
	}
	parts := map[string]Partition{}
	for i, p := range plan {
		parts[p.key] = table.Partitions[i]
	}
	res := &PartitionResult{DiskLabel: table.Label, Partitions: parts}

	stream := func(what string, src image.Image, at int64) error {
		wo := o.Write
		wo.Offset = at
		if _, err := WriteImage(ctx, dst, src, wo); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
	if esp, ok := parts[PartEFI]; ok {
		serial := make([]byte, 4)
		if _, err := rand.Read(serial); err != nil {
			return nil, err
		}
		id := fmt.Sprintf("%08X", serial)
		if err := o.mkfsAndStream(ctx, esp.Size, []string{"mkfs.vfat", "-n", "efi-part", "-i", id}, func(fs image.Image) error {
			return stream("EFI system partition", fs, esp.Start)
		}); err != nil {
			return nil, err
		}
		res.EFISystemPartitionUUID = id[:4] + "-" + id[4:]
	}
	if cd, ok := parts[PartConfigDrive]; ok {
		if err := stream("config drive", image.Raw(bytes.NewReader(o.ConfigDrive), int64(len(o.ConfigDrive))), cd.Start); err != nil {
			return nil, err
		}
	}
	root := parts[PartRoot]
	if err := stream("root partition", img, root.Start); err != nil {
		return nil, err
	}
	if sw, ok := parts[PartSwap]; ok {
		hdr, err := swapHeader(sw.Size, "swap1", newGUIDBytes())
		if err != nil {
			return nil, err
		}
		if _, err := dst.WriteAt(hdr, sw.Start); err != nil {
			return nil, fmt.Errorf("write swap header: %w", err)
		}
	}
	if eph, ok := parts[PartEphemeral]; ok && !o.PreserveEphemeral {
		if err := o.mkfsAndStream(ctx, eph.Size, mkfsCommand(o.EphemeralFormat, "ephemeral0"), func(fs image.Image) error {
			return stream("ephemeral partition", fs, eph.Start)
		}); err != nil {
			return nil, err
		}
	}
	// The table and swap header went around WriteImage's own flush.
	if err := syncTarget(dst); err != nil {
		return nil, err
	}
	if res.RootUUID, err = fsUUID(dst, root.Start); err != nil {
		return nil, err
	}
	if res.RootUUID == "" {
		res.RootUUID = table.PartUUID(root)
	}
	return res, nil
}

// mkfsCommand is Ironic's mkfs rule: -F for ext*, -n for FAT labels, -L
// otherwise.
func mkfsCommand(fs, label string) []string {
	if fs == "" {
		fs = "ext4"
	}
	args := []string{"mkfs", "-t", fs}
	switch fs {
	case "ext2", "ext3", "ext4":
		args = append(args, "-F", "-L", label)
	case "vfat", "msdos", "fat":
		args = append(args, "-n", label)
	default:
		args = append(args, "-L", label)
	}
	return args
}

// mkfsAndStream makes a filesystem in a sparse temporary file of size bytes
// and hands it, opened as an image, to write.
func (o PartitionOptions) mkfsAndStream(ctx context.Context, size int64, argv []string, write func(image.Image) error) error {
	f, err := os.CreateTemp(o.TempDir, "ferric-mkfs-")
	if err != nil {
		return fmt.Errorf("mkfs scratch file: %w", err)
	}
	path := f.Name()
	defer os.Remove(path)
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("mkfs scratch file: %w", err)
	}
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], path)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	fs, err := image.Open(path)
	if err != nil {
		return err
	}
	defer fs.Close()
	if fs.Format() != image.FormatRaw {
		return fmt.Errorf("%s produced a %s file in %s", argv[0], fs.Format(), filepath.Dir(path))
	}
	return write(fs)
}

// wipeMetadata clears what could make the new layout ambiguous: the first
// and last MiB of the disk (partition tables, both GPT copies, RAID and ZFS
// labels, filesystem signatures of the whole device) and, unless the disk is
// known to be zeroed, the first MiB of every new partition: partitions that
// are not fully written (swap, BIOS boot) must not show the signature of an
// old filesystem that started there.
func wipeMetadata(dst Target, t *Table, zeroed bool) error {
	regions := [][2]int64{{0, min(mib, dst.Size())}, {max(dst.Size()-mib, 0), dst.Size()}}
	if !zeroed {
		for _, p := range t.Partitions {
			regions = append(regions, [2]int64{p.Start, p.Start + min(p.Size, mib)})
		}
	}
	for _, r := range regions {
		for off := r[0]; off < r[1]; {
			n := min(r[1]-off, int64(len(zeros)))
			if _, err := dst.WriteAt(zeros[:n], off); err != nil {
				return fmt.Errorf("wipe disk metadata at %d: %w", off, err)
			}
			off += n
		}
	}
	return nil
}

// matchExisting checks that the disk's table has the layout just computed
// (the rebuild case), and returns it so its identifiers are reported.
func matchExisting(dst Target, want *Table) (*Table, error) {
	have, err := ReadTable(dst)
	if err != nil {
		return nil, fmt.Errorf("preserve_ephemeral: read existing partition table: %w", err)
	}
	if have.Label != want.Label || len(have.Partitions) != len(want.Partitions) {
		return nil, fmt.Errorf("preserve_ephemeral: existing %s table with %d partitions does not match the requested %s layout with %d", have.Label, len(have.Partitions), want.Label, len(want.Partitions))
	}
	for i, p := range want.Partitions {
		h := have.Partitions[i]
		if h.Number != p.Number || h.Start != p.Start || h.Size != p.Size {
			return nil, fmt.Errorf("preserve_ephemeral: existing partition %d (%d+%d bytes) differs from the requested layout (%d+%d bytes)", h.Number, h.Start, h.Size, p.Start, p.Size)
		}
	}
	return have, nil
}
