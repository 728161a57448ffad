package erase

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Metadata destroys what makes a disk's old contents findable: partition tables (MBR,
// and GPT with its backup at the end) and filesystem, RAID and LVM signatures. Each
// partition of a block device first has its signatures removed by wipefs (in reverse
// order, partitions before their disk, like IPA), then the disk itself, and the first
// and last MiB are overwritten with zeros and read back. Everything between the two
// ends keeps its bytes.
func Metadata(ctx context.Context, path string) (Record, error) {
	start := time.Now()
	parts, err := partitions(path)
	if err != nil {
		return Record{}, err
	}
	for _, p := range append(parts, path) {
		if err := wipefs(ctx, p); err != nil {
			return Record{}, err
		}
	}
	d, err := openDisk(path)
	if err != nil {
		return Record{}, err
	}
	defer d.close()
	zero := alignedBuffer(edge)
	regions := []int64{0}
	if d.size > edge {
		regions = append(regions, max(edge, d.size-edge)/align*align)
	}
	var written int64
	for _, off := range regions {
		n := min(int64(edge), d.size-off)
		if err := d.writeAt(zero[:n], off); err != nil {
			return Record{}, fmt.Errorf("erase metadata of %s: %w", path, err)
		}
		written += n
	}
	if err := d.f.Sync(); err != nil {
		return Record{}, fmt.Errorf("erase metadata of %s: sync: %w", path, err)
	}
	got := alignedBuffer(edge)
	for _, off := range regions {
		n := min(int64(edge), d.size-off)
		if err := d.readAt(got[:n], off); err != nil {
			return Record{}, err
		}
		for i, b := range got[:n] {
			if b != 0 {
				return Record{}, &VerifyError{Device: path, Offset: off + int64(i)}
			}
		}
	}
	return Record{Method: "metadata", Passes: 1, Bytes: written, Duration: time.Since(start).Seconds(),
		SamplesChecked: len(regions)}, nil
}

func wipefs(ctx context.Context, dev string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "wipefs", "--force", "--all", dev).CombinedOutput()
	if err != nil {
		return fmt.Errorf("wipefs %s: %w: %s", dev, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// partitions lists the partition device nodes of a whole-disk block device, last
// first; a regular file or a partition has none.
func partitions(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Mode()&os.ModeDevice == 0 {
		return nil, nil
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(real)
	entries, err := os.ReadDir(filepath.Join("/sys/class/block", name))
	if err != nil {
		return nil, nil
	}
	var parts []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join("/sys/class/block", name, e.Name(), "partition")); err == nil {
			parts = append(parts, filepath.Join("/dev", e.Name()))
		}
	}
	slices.Sort(parts)
	slices.Reverse(parts)
	return parts, nil
}
