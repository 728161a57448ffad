package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ferricbm/ferric/deploy/erase"
	"github.com/ferricbm/ferric/deploy/iscsi"
	"github.com/ferricbm/ferric/tests/lab"
)

var (
	eraseSize   = flag.Int64("erase-size", 1<<30, "bytes of the disk each erase measurement overwrites (a multiple of 4 MiB)")
	eraseDir    = flag.String("erase-dir", "", "directory for the erase measurements' disk files (default: the system temp directory)")
	eraseRounds = flag.Int("erase-rounds", 3, "runs of each erase and its reference tool; the medians are compared")
)

// eraseTarget is the share of the reference tool's throughput an erase should reach.
const eraseTarget = 0.9

// benchErase measures disk erase throughput beside the tool an operator would
// otherwise use, in one run so both see the same load: the agent's erase of a
// file-backed disk beside dd, and the conductor's erase of a LUN over iSCSI beside
// qemu-img. Erase times include the verification read-back. Each pair runs
// -erase-rounds times, alternating which goes first, and the median times are
// compared: on a shared machine a single run swings by tens of percent.
func benchErase(ctx context.Context, _ settings) ([]row, error) {
	size := *eraseSize
	if size <= 0 || size%(4<<20) != 0 {
		return nil, fmt.Errorf("-erase-size %d: want a positive multiple of 4 MiB", size)
	}
	if *eraseRounds < 1 {
		return nil, fmt.Errorf("-erase-rounds %d: want at least 1", *eraseRounds)
	}
	work, err := os.MkdirTemp(*eraseDir, "ferric-erase-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	fmt.Printf("load average %s, disk files in %s, %d MiB each\n", loadAverage(), work, size>>20)
	rows, err := benchLocalErase(ctx, work, size)
	if err != nil {
		return nil, err
	}
	more, err := benchISCSIErase(ctx, work, size)
	if err != nil {
		return nil, err
	}
	fmt.Printf("load average %s\n", loadAverage())
	return append(rows, more...), nil
}

// benchLocalErase compares erase.Device on a file with
// `dd if=/dev/zero of=FILE bs=4M oflag=direct conv=fsync,notrunc` of the same size
// just before it. notrunc keeps dd from freeing and reallocating the file's blocks,
// so both overwrite the same allocated file.
func benchLocalErase(ctx context.Context, work string, size int64) ([]row, error) {
	path := filepath.Join(work, "local.img")
	dd := func() (time.Duration, error) {
		start := time.Now()
		out, err := exec.CommandContext(ctx, "dd", "if=/dev/zero", "of="+path, "bs=4M", "oflag=direct",
			"conv=fsync,notrunc", fmt.Sprintf("count=%d", size/(4<<20))).CombinedOutput()
		if err != nil {
			return 0, fmt.Errorf("dd: %w: %s", err, out)
		}
		return time.Since(start), nil
	}
	// The first dd allocates the file: every measured run overwrites.
	if _, err := dd(); err != nil {
		return nil, err
	}
	var rows []row
	for _, c := range []struct {
		name string
		opts erase.Options
	}{
		{"zero pass", erase.Options{Zeroize: true}},
		{"random pass", erase.Options{Iterations: 1}},
	} {
		fmt.Printf("agent erase, %s, beside dd ...\n", c.name)
		took, err := rounds(*eraseRounds, func() (time.Duration, error) {
			start := time.Now()
			_, err := erase.Device(ctx, path, c.opts)
			return time.Since(start), err
		}, dd)
		if err != nil {
			return nil, err
		}
		rows = append(rows, eraseRow(fmt.Sprintf("agent erase %s, %d MiB file (vs dd)", c.name, size>>20),
			size, took[0], "dd", took[1]))
	}
	return rows, nil
}

// benchISCSIErase exports a file from a tgtd started here and compares, through that
// target, erase.Overwrite with one zero pass (login, write, sync, verification
// read-back, logout) with `qemu-img convert -n -S 0` of a file of zeros of the same
// size onto the LUN (login, write, flush, logout). The source file is allocated and
// -S 0 turns off qemu-img's zero detection, so qemu-img sends every byte as data,
// like the erase: the tgtd's read byte count (/proc/PID/io rchar: the iSCSI data it
// receives, plus the backing file reads of the erase's verification) shows it.
func benchISCSIErase(ctx context.Context, work string, size int64) ([]row, error) {
	if _, err := exec.LookPath("qemu-img"); err != nil {
		return nil, fmt.Errorf("qemu-img (Debian qemu-utils, qemu-block-extra): %w", err)
	}
	lunFile := filepath.Join(work, "lun.img")
	zeros := filepath.Join(work, "zeros.img")
	for _, f := range []string{lunFile, zeros} {
		out, err := exec.CommandContext(ctx, "dd", "if=/dev/zero", "of="+f, "bs=4M", "conv=fsync",
			fmt.Sprintf("count=%d", size/(4<<20))).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("dd: %w: %s", err, out)
		}
	}
	const iqn = "iqn.2026-12.io.ferricbm.bench:erase"
	daemon, stop, err := exportBenchLUN(ctx, work, iqn, lunFile, false)
	if err != nil {
		return nil, err
	}
	defer stop()

	fmt.Println("conductor erase over iSCSI, zero pass, beside qemu-img ...")
	pid := daemon.PID()
	// received runs f and returns how long it took and how many bytes tgtd read
	// meanwhile, which must include every byte of the disk.
	received := func(f func() error) (time.Duration, error) {
		before, err := lab.ReadChars(pid)
		if err != nil {
			return 0, err
		}
		start := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		took := time.Since(start)
		after, err := lab.ReadChars(pid)
		if err != nil {
			return 0, err
		}
		fmt.Printf("  %s, tgtd read %d MiB\n", took.Round(time.Millisecond), (after-before)>>20)
		if after-before < size {
			return 0, fmt.Errorf("tgtd read %d bytes, fewer than the %d-byte disk", after-before, size)
		}
		return took, nil
	}
	took, err := rounds(*eraseRounds, func() (time.Duration, error) {
		return received(func() error { return overwriteLUN(ctx, daemon.Portal(), iqn) })
	}, func() (time.Duration, error) {
		return received(func() error {
			out, err := exec.CommandContext(ctx, "qemu-img", "convert", "-t", "writeback", "-n", "-f", "raw", "-O", "raw", "-S", "0",
				zeros, fmt.Sprintf("iscsi://%s/%s/1", daemon.Portal(), iqn)).CombinedOutput()
			if err != nil {
				return fmt.Errorf("qemu-img convert: %w: %s", err, out)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return []row{eraseRow(fmt.Sprintf("conductor erase over iSCSI, zero pass, %d MiB (vs qemu-img)", size>>20),
		size, took[0], "qemu-img", took[1])}, nil
}

// rounds runs each of fs n times, rotating which goes first from round to
// round so that they share the machine's load, and returns their medians.
func rounds(n int, fs ...func() (time.Duration, error)) ([]time.Duration, error) {
	took := make([][]time.Duration, len(fs))
	for i := range n {
		for k := range fs {
			j := (i + k) % len(fs)
			d, err := fs[j]()
			if err != nil {
				return nil, err
			}
			took[j] = append(took[j], d)
		}
	}
	medians := make([]time.Duration, len(fs))
	for j, ds := range took {
		medians[j] = median(ds)
	}
	return medians, nil
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// overwriteLUN logs in to iqn and erases its first disk LUN with one zero pass, as
// the conductor does for a callback-only ramdisk.
func overwriteLUN(ctx context.Context, portal, iqn string) error {
	s, err := iscsi.Dial(ctx, portal, iqn, iscsi.Options{})
	if err != nil {
		return err
	}
	id, err := s.FirstDisk(ctx)
	if err == nil {
		var lun *iscsi.LUN
		if lun, err = s.OpenLUN(ctx, id); err == nil {
			_, err = erase.Overwrite(ctx, lun.Device(ctx), iqn, erase.Options{Zeroize: true})
		}
	}
	return errors.Join(err, s.Close())
}

// eraseRow reports an erase's throughput beside the reference tool's.
func eraseRow(name string, size int64, took time.Duration, tool string, toolTook time.Duration) row {
	mib := float64(size) / (1 << 20)
	rate, toolRate := mib/took.Seconds(), mib/toolTook.Seconds()
	ratio := rate / toolRate
	v := "yes"
	if ratio < eraseTarget {
		v = "NO"
	}
	return row{name, fmt.Sprintf("%.0f MiB/s; %s %.0f MiB/s; %.0f%%", rate, tool, toolRate, 100*ratio),
		fmt.Sprintf("≥ %.0f%% of %s", 100*eraseTarget, tool), v}
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
