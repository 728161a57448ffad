// Package disk writes images onto a node's disk through any byte-addressed
// target (a remote iSCSI LUN, a local file) and lays out partition tables,
// swap, ephemeral and config drive partitions the way Ironic's iSCSI deploy
// does, without shelling out for anything but mkfs.
package disk

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferricbm/ferric/deploy/image"
)

// Target is where images are written: a disk that can be read back.
type Target interface {
	io.WriterAt
	io.ReaderAt
	Size() int64
}

// File is a Target backed by a local file or block device.
type File struct {
	*os.File
	size int64
}

// OpenFile opens path read-write as a Target; its size is fixed at open.
func OpenFile(path string) (*File, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open target: %w", err)
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open target %s: %w", path, err)
	}
	return &File{File: f, size: size}, nil
}

// Size is the target's size in bytes.
func (f *File) Size() int64 { return f.size }

// ErrVerify is returned when the data read back differs from what was sent.
var ErrVerify = errors.New("verification failed")

// Progress is reported while an image is written.
type Progress struct {
	// Done counts bytes of the image processed (written, skipped or
	// checked), Total is the image's virtual size.
	Done, Total int64
	// Written counts bytes actually sent to the target.
	Written int64
	// BytesPerSecond is Done over the time since the write started.
	BytesPerSecond float64
}

// Options tune WriteImage. The zero value is usable.
type Options struct {
	// Offset is where byte 0 of the image lands on the target.
	Offset int64
	// Workers is the number of parallel writers (default 4): iSCSI
	// round trips, not bandwidth, bound a single writer.
	Workers int
	// ChunkSize is the size of reads used to check zero runs on the target
	// (default 4 MiB). Data is written in the image's extents, which are
	// at most 4 MiB and aligned to 4 MiB of the image.
	ChunkSize int
	// AssumeZeroed states that the target reads as zeros wherever the image
	// does (a fresh or cleaned disk), so zero runs are skipped entirely.
	// Otherwise each zero run is read back and only its non-zero 64 KiB
	// blocks are overwritten: reading is as costly as writing over iSCSI,
	// but nothing is written where the disk already holds zeros, and
	// stale data never survives under the image.
	AssumeZeroed bool
	// SkipVerify skips reading the written data back.
	SkipVerify bool
	// Progress, if set, is called about every ProgressInterval (default 1s)
	// and once when writing ends (before verification), from a single
	// goroutine.
	Progress         func(Progress)
	ProgressInterval time.Duration
}

func (o Options) withDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = 4 << 20
	}
	o.ChunkSize = max(o.ChunkSize/image.BlockSize, 1) * image.BlockSize
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = time.Second
	}
	return o
}

// Result summarises a write.
type Result struct {
	// Written is the number of bytes sent to the target (data plus zeros
	// over stale blocks); Zeroed is the part of it that was zeros.
	Written, Zeroed int64
	// Skipped counts bytes of zero runs that were not written.
	Skipped int64
	// Verified counts bytes read back and compared.
	Verified int64
	Elapsed  time.Duration
}

type job struct {
	off  int64 // image offset
	data []byte
	n    int64 // length of a zero-check job (data == nil)
}

// castagnoli is CRC-32C, the checksum iSCSI's own digests use: computed in
// hardware at several GB/s, so checking costs the conductor almost no CPU
// next to SHA-256, and per 64 KiB block it misses a corruption with a
// chance of 2^-32.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// blockSum is the checksum of one written block, kept for verification.
type blockSum struct {
	off int64 // target offset
	n   int32
	sum uint32
}

// WriteImage writes img onto dst at opts.Offset, never sending the image's
// zero runs, then reads back every written byte and compares its CRC-32C,
// block by block, with that of what was sent.
func WriteImage(ctx context.Context, dst Target, img image.Image, opts Options) (Result, error) {
	o := opts.withDefaults()
	size := img.VirtualSize()
	if o.Offset < 0 || o.Offset+size > dst.Size() {
		return Result{}, fmt.Errorf("image of %d bytes at offset %d does not fit a target of %d bytes", size, o.Offset, dst.Size())
	}
	w := &writer{dst: dst, o: o, start: time.Now(), total: size}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	stopProgress := w.reportProgress()
	err := w.run(ctx, cancel, img)
	stopProgress()
	res := Result{Written: w.written.Load(), Zeroed: w.zeroed.Load(), Skipped: w.skipped.Load()}
	if err == nil {
		err = syncTarget(dst)
	}
	if err != nil {
		res.Elapsed = time.Since(w.start)
		return res, err
	}
	if !o.SkipVerify {
		n, err := verify(ctx, dst, w.sums, o.Workers)
		res.Verified = n
		if err != nil {
			res.Elapsed = time.Since(w.start)
			return res, err
		}
	}
	res.Elapsed = time.Since(w.start)
	return res, nil
}

// syncTarget flushes the target's write cache when it has one (an iSCSI
// LUN's SYNCHRONIZE CACHE, a file's fsync): the node reboots into what is
// on the medium, not in the target's memory.
func syncTarget(dst Target) error {
	if s, ok := dst.(interface{ Sync() error }); ok {
		if err := s.Sync(); err != nil {
			return fmt.Errorf("flush target: %w", err)
		}
	}
	return nil
}

type writer struct {
	dst   Target
	o     Options
	start time.Time
	total int64

	done, written, zeroed, skipped atomic.Int64

	mu   sync.Mutex
	sums []blockSum
}

func (w *writer) reportProgress() (stop func()) {
	if w.o.Progress == nil {
		return func() {}
	}
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(w.o.ProgressInterval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				w.o.Progress(w.progress())
			case <-quit:
				w.o.Progress(w.progress())
				return
			}
		}
	}()
	return func() { close(quit); <-finished }
}

func (w *writer) progress() Progress {
	p := Progress{Done: w.done.Load(), Total: w.total, Written: w.written.Load()}
	if s := time.Since(w.start).Seconds(); s > 0 {
		p.BytesPerSecond = float64(p.Done) / s
	}
	return p
}

// run feeds extents to the workers. Buffers circulate through free, which
// bounds memory to two buffers per worker.
func (w *writer) run(ctx context.Context, cancel context.CancelCauseFunc, img image.Image) error {
	jobs := make(chan job)
	free := make(chan []byte, 2*w.o.Workers)
	for range cap(free) {
		free <- nil // allocated on first use
	}
	var wg sync.WaitGroup
	for range w.o.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			zbuf := make([]byte, 0)
			for j := range jobs {
				if ctx.Err() != nil {
					// Drain without touching the disk after a failure.
					if j.data != nil {
						free <- j.data
					}
					continue
				}
				var err error
				if j.data != nil {
					err = w.writeData(j)
					free <- j.data
				} else {
					if len(zbuf) == 0 {
						zbuf = make([]byte, w.o.ChunkSize)
					}
					err = w.zeroStale(j, zbuf)
				}
				if err != nil {
					cancel(err)
				}
			}
		}()
	}
	err := img.Extents(func(e image.Extent) error {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		if e.Zero {
			if w.o.AssumeZeroed {
				w.skipped.Add(e.Length)
				w.done.Add(e.Length)
				return nil
			}
			for off := e.Offset; off < e.Offset+e.Length; off += int64(w.o.ChunkSize) {
				n := min(int64(w.o.ChunkSize), e.Offset+e.Length-off)
				select {
				case jobs <- job{off: off, n: n}:
				case <-ctx.Done():
					return context.Cause(ctx)
				}
			}
			return nil
		}
		var buf []byte
		select {
		case buf = <-free:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		if int64(cap(buf)) < e.Length {
			buf = make([]byte, max(e.Length, 4<<20))
		}
		buf = buf[:e.Length]
		copy(buf, e.Data)
		select {
		case jobs <- job{off: e.Offset, data: buf}:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	close(jobs)
	wg.Wait()
	if cerr := context.Cause(ctx); cerr != nil {
		// A worker's error (or the caller's cancellation) explains why the
		// walk stopped better than the walk's own error.
		return fmt.Errorf("write image: %w", cerr)
	}
	if err != nil {
		return fmt.Errorf("write image: %w", err)
	}
	return nil
}

func (w *writer) writeData(j job) error {
	at := w.o.Offset + j.off
	if _, err := w.dst.WriteAt(j.data, at); err != nil {
		return fmt.Errorf("write %d bytes at offset %d: %w", len(j.data), at, err)
	}
	w.written.Add(int64(len(j.data)))
	w.done.Add(int64(len(j.data)))
	if w.o.SkipVerify {
		return nil
	}
	sums := make([]blockSum, 0, (len(j.data)+image.BlockSize-1)/image.BlockSize)
	for i := 0; i < len(j.data); i += image.BlockSize {
		b := j.data[i:min(len(j.data), i+image.BlockSize)]
		sums = append(sums, blockSum{off: at + int64(i), n: int32(len(b)), sum: crc32.Checksum(b, castagnoli)})
	}
	w.mu.Lock()
	w.sums = append(w.sums, sums...)
	w.mu.Unlock()
	return nil
}

var zeros = make([]byte, 4<<20)

// zeroStale reads a zero run of the image back from the target and
// overwrites the blocks that are not zero.
func (w *writer) zeroStale(j job, buf []byte) error {
	at := w.o.Offset + j.off
	p := buf[:j.n]
	if _, err := w.dst.ReadAt(p, at); err != nil && !(errors.Is(err, io.EOF) && at+j.n == w.dst.Size()) {
		return fmt.Errorf("read back %d bytes at offset %d: %w", j.n, at, err)
	}
	runStart := -1
	flush := func(end int) error {
		if runStart < 0 {
			return nil
		}
		for s := runStart; s < end; s += len(zeros) {
			n := min(end-s, len(zeros))
			if _, err := w.dst.WriteAt(zeros[:n], at+int64(s)); err != nil {
				return fmt.Errorf("zero %d bytes at offset %d: %w", n, at+int64(s), err)
			}
			w.written.Add(int64(n))
			w.zeroed.Add(int64(n))
		}
		runStart = -1
		return nil
	}
	for i := 0; i < len(p); {
		end := min(len(p), i+int(image.BlockSize-(at+int64(i))%image.BlockSize))
		if image.IsZero(p[i:end]) {
			if err := flush(i); err != nil {
				return err
			}
			w.skipped.Add(int64(end - i))
		} else if runStart < 0 {
			runStart = i
		}
		i = end
	}
	if err := flush(len(p)); err != nil {
		return err
	}
	w.done.Add(j.n)
	return nil
}

// verify reads the recorded blocks back in parallel and reports the lowest
// offset whose content differs.
func verify(ctx context.Context, dst Target, sums []blockSum, workers int) (int64, error) {
	sort.Slice(sums, func(i, k int) bool { return sums[i].off < sums[k].off })
	type group struct{ first, last int } // indexes into sums, inclusive
	groups := make(chan group)
	var verified atomic.Int64
	var firstBad atomic.Int64
	firstBad.Store(-1)
	var errMu sync.Mutex
	var ioErr error
	lowerBad := func(off int64) {
		for {
			cur := firstBad.Load()
			if cur >= 0 && cur <= off {
				return
			}
			if firstBad.CompareAndSwap(cur, off) {
				return
			}
		}
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 4<<20)
			for g := range groups {
				start := sums[g.first].off
				n := sums[g.last].off + int64(sums[g.last].n) - start
				p := buf[:n]
				if _, err := dst.ReadAt(p, start); err != nil && !(errors.Is(err, io.EOF) && start+n == dst.Size()) {
					errMu.Lock()
					if ioErr == nil {
						ioErr = fmt.Errorf("verify: read %d bytes at offset %d: %w", n, start, err)
					}
					errMu.Unlock()
					continue
				}
				for _, s := range sums[g.first : g.last+1] {
					b := p[s.off-start : s.off-start+int64(s.n)]
					if crc32.Checksum(b, castagnoli) != s.sum {
						lowerBad(s.off)
						break
					}
				}
				verified.Add(n)
			}
		}()
	}
	for i := 0; i < len(sums); {
		if err := ctx.Err(); err != nil {
			break
		}
		if bad := firstBad.Load(); bad >= 0 && sums[i].off > bad {
			break // everything further is past the first bad block already found
		}
		// Group contiguous blocks into reads of up to 4 MiB.
		j := i
		for j+1 < len(sums) && sums[j+1].off == sums[j].off+int64(sums[j].n) && sums[j+1].off+int64(sums[j+1].n)-sums[i].off <= 4<<20 {
			j++
		}
		groups <- group{i, j}
		i = j + 1
	}
	close(groups)
	wg.Wait()
	if bad := firstBad.Load(); bad >= 0 {
		return verified.Load(), fmt.Errorf("%w: data read back at offset %d differs from the data written", ErrVerify, bad)
	}
	if ioErr != nil {
		return verified.Load(), ioErr
	}
	if err := ctx.Err(); err != nil {
		return verified.Load(), fmt.Errorf("verify: %w", err)
	}
	return verified.Load(), nil
}
