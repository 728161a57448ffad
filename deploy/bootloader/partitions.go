// Package bootloader installs the boot loader of a deployed partition image
// onto the disk it was written to, the way Ironic's agent does: the
// image's own GRUB, run in a chroot of its root filesystem, puts its boot
// code in the disk's MBR (BIOS) or its EFI binary on the EFI system
// partition (UEFI).
package bootloader

import (
	"fmt"
	"strings"
)

// espLabel is the FAT label the conductor gives the EFI system partition
// it creates, which the callback-only ramdisk looks the ESP up by.
const espLabel = "efi-part"

// Partition is one partition of the disk as blkid probes it.
type Partition struct {
	Device   string
	Number   int
	UUID     string // the filesystem's UUID (a FAT volume ID for the ESP)
	PartUUID string
	Label    string
	Type     string // the filesystem type, "" when blkid finds none
}

// Partitions are a disk's partitions in partition-number order.
type Partitions []Partition

// Root is the partition holding the root filesystem: the one whose
// filesystem UUID or PARTUUID is uuid (the conductor reports either), or,
// with no uuid, the last partition, where the conductor always puts root.
func (ps Partitions) Root(uuid string) (Partition, error) {
	if len(ps) == 0 {
		return Partition{}, fmt.Errorf("the disk has no partitions")
	}
	if uuid == "" {
		return ps[len(ps)-1], nil
	}
	for _, p := range ps {
		if strings.EqualFold(p.UUID, uuid) || strings.EqualFold(p.PartUUID, uuid) {
			return p, nil
		}
	}
	return Partition{}, fmt.Errorf("no partition with UUID %s on the disk", uuid)
}

// ESP is the EFI system partition: the one with FAT volume ID (or
// PARTUUID) uuid, or, with no uuid, the FAT partition labelled efi-part.
func (ps Partitions) ESP(uuid string) (Partition, error) {
	for _, p := range ps {
		switch {
		case uuid != "" && (strings.EqualFold(p.UUID, uuid) || strings.EqualFold(p.PartUUID, uuid)):
			return p, nil
		case uuid == "" && p.Type == "vfat" && strings.EqualFold(p.Label, espLabel):
			return p, nil
		}
	}
	if uuid == "" {
		return Partition{}, fmt.Errorf("no EFI system partition labelled %s on the disk", espLabel)
	}
	return Partition{}, fmt.Errorf("no EFI system partition with UUID %s on the disk", uuid)
}

// parseBlkid reads `blkid -p -o export` output into p.
func parseBlkid(p *Partition, out string) {
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		switch k {
		case "UUID":
			p.UUID = v
		case "PART_ENTRY_UUID", "PARTUUID":
			p.PartUUID = v
		case "LABEL":
			p.Label = v
		case "TYPE":
			p.Type = v
		}
	}
}
