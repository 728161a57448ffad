package erase

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ferricbm/ferric/deploy/disk"
)

// Metadata runs WipeMetadata on path, a block device or a regular file, and then
// has the kernel re-read a block device's partition table.
func Metadata(ctx context.Context, path string) (Record, error) {
	d, err := openLocal(path)
	if err != nil {
		return Record{}, fmt.Errorf("erase metadata of %s: %w", path, err)
	}
	defer d.Close()
	rec, err := WipeMetadata(ctx, d, path)
	if err == nil {
		d.rereadPartitions()
	}
	return rec, err
}

// WipeMetadata destroys what makes a disk's old contents findable: partition tables
// (MBR, and GPT with its backup at the end), boot loaders, and the filesystem, swap,
// RAID and LVM signatures of the disk and of every partition. It reads the partition
// table first (GPT from either copy; MBR primary and logical partitions), then
// overwrites with zeros the first and last MiB of the disk and of each partition
// found, where ext*, xfs, btrfs, vfat, iso9660, swap, LVM and md keep their
// superblocks, syncs, and reads all of it back. Everything else keeps its bytes. A
// table that cannot be read (corrupt in both GPT copies, or not in 512-byte sectors)
// leaves only the ends of the disk to wipe, which no partitioning tool can then get
// past. name identifies the disk in errors.
func WipeMetadata(ctx context.Context, d Disk, name string) (Record, error) {
	start := time.Now()
	regions, err := metadataRegions(d)
	if err != nil {
		return Record{}, fmt.Errorf("erase metadata of %s: %w", name, err)
	}
	zero := alignedBuffer(edge)
	var written int64
	for _, r := range regions {
		for off := r.off; off < r.end; off += edge {
			if err := ctx.Err(); err != nil {
				return Record{}, fmt.Errorf("erase metadata of %s: %w", name, err)
			}
			n := min(edge, r.end-off)
			if _, err := d.WriteAt(zero[:n], off); err != nil {
				return Record{}, fmt.Errorf("erase metadata of %s: write at %d: %w", name, off, err)
			}
			written += n
		}
	}
	if err := d.Sync(); err != nil {
		return Record{}, fmt.Errorf("erase metadata of %s: sync: %w", name, err)
	}
	got := alignedBuffer(edge)
	for _, r := range regions {
		for off := r.off; off < r.end; off += edge {
			buf := got[:min(edge, r.end-off)]
			if err := readFull(d, buf, off); err != nil {
				return Record{}, fmt.Errorf("verify metadata erase of %s: %w", name, err)
			}
			if i := slices.IndexFunc(buf, func(b byte) bool { return b != 0 }); i >= 0 {
				return Record{}, &VerifyError{Device: name, Offset: off + int64(i)}
			}
		}
	}
	return Record{Method: "metadata", Passes: 1, Bytes: written, Duration: time.Since(start).Seconds(),
		SamplesChecked: len(regions)}, nil
}

// span is the byte range [off, end) of a disk.
type span struct{ off, end int64 }

// metadataRegions lists the ranges WipeMetadata zeros, sorted, without overlaps (so
// no byte is sent twice) and widened to 4 KiB boundaries so O_DIRECT can write them.
func metadataRegions(d Disk) ([]span, error) {
	size := d.Size()
	ends := func(off, n int64) []span {
		head := min(n, edge)
		return []span{{off, off + head}, {off + n - head, off + n}}
	}
	regions := ends(0, size)
	// A table that cannot be read hides its partitions from every other tool too:
	// the ends of the disk are then all there is to wipe.
	if t, err := disk.ReadTable(d); err == nil {
		logical, err := disk.LogicalPartitions(d, t)
		if err != nil {
			return nil, err
		}
		for _, p := range append(t.Partitions, logical...) {
			if p.Start >= size || p.Size <= 0 {
				continue
			}
			regions = append(regions, ends(p.Start, min(p.Size, size-p.Start))...)
		}
	}
	for i, r := range regions {
		regions[i] = span{r.off / align * align, min(size, (r.end+align-1)/align*align)}
	}
	slices.SortFunc(regions, func(a, b span) int { return cmp.Compare(a.off, b.off) })
	merged := regions[:1]
	for _, r := range regions[1:] {
		last := &merged[len(merged)-1]
		if r.off <= last.end {
			last.end = max(last.end, r.end)
			continue
		}
		merged = append(merged, r)
	}
	return merged, nil
}
