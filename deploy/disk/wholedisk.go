package disk

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ferricbm/ferric/deploy/image"
)

const (
	configDriveLabel = "config-2"
	// An msdos table addresses 2^32 sectors; a config drive on a larger
	// disk goes just below that limit.
	mbrLimit = int64(mbrMaxSectors) * SectorSize
)

// WholeDiskOptions describe a whole-disk image deploy.
type WholeDiskOptions struct {
	// ConfigDrive is the decoded config drive, written to a partition at the
	// end of the disk (at most 64 MiB).
	ConfigDrive []byte
	Write       Options
}

// WholeDiskResult is what Ironic's deploy_disk_image returns.
type WholeDiskResult struct {
	// DiskIdentifier is the MBR disk signature (4 bytes at offset 440) as
	// 0x%08x, as hexdump prints it.
	DiskIdentifier string
	// ConfigDrive is the partition the config drive went to, if any.
	ConfigDrive *Partition
}

// WriteWholeDiskImage writes img over the start of dst and, when asked, the
// config drive into a partition labelled config-2: an existing one is
// reused, otherwise a 64 MiB partition is added at the end of the disk.
func WriteWholeDiskImage(ctx context.Context, dst Target, img image.Image, o WholeDiskOptions) (*WholeDiskResult, error) {
	if img.VirtualSize() > dst.Size() {
		return nil, fmt.Errorf("image of %d bytes is larger than the %d-byte disk", img.VirtualSize(), dst.Size())
	}
	if int64(len(o.ConfigDrive)) > maxConfigDrive {
		return nil, fmt.Errorf("config drive of %d bytes exceeds the %d MiB limit for whole disk images", len(o.ConfigDrive), maxConfigDrive>>20)
	}
	wo := o.Write
	wo.Offset = 0
	if _, err := WriteImage(ctx, dst, img, wo); err != nil {
		return nil, err
	}
	res := &WholeDiskResult{}
	if len(o.ConfigDrive) > 0 {
		if err := checkSectorSize(dst); err != nil {
			return nil, err
		}
		part, err := configDrivePartition(dst)
		if err != nil {
			return nil, fmt.Errorf("config drive: %w", err)
		}
		if int64(len(o.ConfigDrive)) > part.Size {
			return nil, fmt.Errorf("config drive of %d bytes does not fit partition %d (%d bytes)", len(o.ConfigDrive), part.Number, part.Size)
		}
		wo.Offset = part.Start
		if _, err := WriteImage(ctx, dst, image.Raw(bytes.NewReader(o.ConfigDrive), int64(len(o.ConfigDrive))), wo); err != nil {
			return nil, fmt.Errorf("config drive: %w", err)
		}
		res.ConfigDrive = &part
		// The partition table went around WriteImage's own flush.
		if err := syncTarget(dst); err != nil {
			return nil, err
		}
	}
	id, err := DiskIdentifier(dst)
	if err != nil {
		return nil, err
	}
	res.DiskIdentifier = id
	return res, nil
}

// DiskIdentifier returns the MBR disk signature of dst as 0x%08x.
func DiskIdentifier(dst Target) (string, error) {
	b := make([]byte, 4)
	if _, err := dst.ReadAt(b, mbrSigOffset); err != nil {
		return "", fmt.Errorf("read disk identifier: %w", err)
	}
	return fmt.Sprintf("0x%08x", binary.LittleEndian.Uint32(b)), nil
}

// configDrivePartition finds the partition labelled config-2 or adds one of
// 64 MiB at the end of the disk.
func configDrivePartition(dst Target) (Partition, error) {
	t, err := ReadTable(dst)
	if errors.Is(err, ErrNoTable) {
		return Partition{}, fmt.Errorf("the image has no partition table to add a config drive partition to")
	}
	if err != nil {
		return Partition{}, err
	}
	for _, p := range t.Partitions {
		if fsLabel(dst, p.Start, p.Size) == configDriveLabel {
			return p, nil
		}
	}
	size := int64(maxConfigDrive)
	var p Partition
	if t.Label == LabelGPT {
		// sgdisk -n 0:-64MB:0: the last 64 MiB before the backup GPT,
		// which moves to the end of the (larger) disk.
		last := dst.Size()/SectorSize - 2 - gptEntrySecs
		first := (last + 1 - size/SectorSize) &^ 2047
		p = Partition{Start: first * SectorSize, Size: (last - first + 1) * SectorSize,
			TypeGUID: TypeLinuxFS, GUID: newGUID(), Name: configDriveLabel}
		p.Number = freeNumber(t, gptEntries)
	} else {
		end := min(dst.Size(), mbrLimit) / SectorSize
		first := (end - size/SectorSize) &^ 2047
		p = Partition{Start: first * SectorSize, Size: (end - first) * SectorSize, Type: mbrTypeLinux}
		p.Number = freeNumber(t, 4)
	}
	if p.Number == 0 {
		return Partition{}, fmt.Errorf("no free slot in the %s partition table", t.Label)
	}
	if p.Start < mib {
		return Partition{}, fmt.Errorf("disk too small for a config drive partition")
	}
	for _, q := range t.Partitions {
		if q.Start < p.Start+p.Size && p.Start < q.Start+q.Size {
			return Partition{}, fmt.Errorf("no room at the end of the disk: partition %d occupies bytes %d-%d", q.Number, q.Start, q.Start+q.Size-1)
		}
	}
	t.Partitions = append(t.Partitions, p)
	if t.Label == LabelGPT {
		err = relocateGPT(dst, t)
	} else {
		err = writeMBR(dst, t)
	}
	if err != nil {
		return Partition{}, err
	}
	return p, nil
}

func freeNumber(t *Table, slots int) int {
	used := map[int]bool{}
	for _, p := range t.Partitions {
		used[p.Number] = true
	}
	for n := 1; n <= slots; n++ {
		if !used[n] {
			return n
		}
	}
	return 0
}

// relocateGPT rewrites t with its backup at the end of dst and clears the
// image's backup header, which sat where the image ended.
func relocateGPT(dst Target, t *Table) error {
	h := make([]byte, SectorSize)
	if _, err := dst.ReadAt(h, SectorSize); err != nil {
		return fmt.Errorf("read GPT header: %w", err)
	}
	oldBackup := int64(binary.LittleEndian.Uint64(h[32:]))
	if err := writeGPT(dst, t); err != nil {
		return err
	}
	sectors := dst.Size() / SectorSize
	if string(h[:8]) == "EFI PART" && oldBackup > 1 && oldBackup < sectors-1-gptEntrySecs {
		if _, err := dst.WriteAt(zeros[:SectorSize], oldBackup*SectorSize); err != nil {
			return fmt.Errorf("clear old backup GPT header: %w", err)
		}
	}
	return nil
}
