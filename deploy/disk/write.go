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

// errVerifyStopped is why the writers stop when verification fails.
var errVerifyStopped = errors.New("verification failed")

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
	// Verifier tells verification what the disk holds (default: ReadBack
	// from the target). The deploy agent checksums its own disk, so the
	// image does not cross the network a second time.
	Verifier ChecksumSource
	// SyncInterval is how many bytes of the image are written between
	// background flushes of the target's cache (default 64 MiB); after
	// each, what it made durable is read back while writing goes on.
	SyncInterval int64
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
	if o.SyncInterval <= 0 {
		o.SyncInterval = 64 << 20
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

func (j job) length() int64 {
	if j.data != nil {
		return int64(len(j.data))
	}
	return j.n
}

// blockSum is the checksum of one written block, kept for verification.
type blockSum struct {
	off int64 // target offset
	n   int32
	sum uint32
}

// WriteImage writes img onto dst at opts.Offset, never sending the image's
// zero runs, and reads back every written byte to compare its CRC-32C, block
// by block, with that of what was sent. Verification runs beside the write:
// every SyncInterval bytes the target's cache is flushed, and the blocks
// written before that flush are read back while the writers go on, so the
// reads come from the medium and the two directions of the link overlap.
func WriteImage(ctx context.Context, dst Target, img image.Image, opts Options) (Result, error) {
	o := opts.withDefaults()
	size := img.VirtualSize()
	if o.Offset < 0 || o.Offset+size > dst.Size() {
		return Result{}, fmt.Errorf("image of %d bytes at offset %d does not fit a target of %d bytes", size, o.Offset, dst.Size())
	}
	w := &writer{dst: dst, o: o, start: time.Now(), total: size}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if !o.SkipVerify {
		src := o.Verifier
		if src == nil {
			src = ReadBack{R: dst}
		}
		w.check = startVerify(ctx, src, o.Workers, func() { cancel(errVerifyStopped) })
	}

	stopProgress := w.reportProgress()
	err := w.run(ctx, cancel, img)
	stopProgress()
	w.syncs.Wait()
	if err == nil {
		err = syncTarget(dst)
	}
	res := Result{Written: w.written.Load(), Zeroed: w.zeroed.Load(), Skipped: w.skipped.Load()}
	if w.check != nil {
		if err == nil {
			w.check.submit(w.sums)
		}
		var verr error
		res.Verified, verr = w.check.finish()
		// A failed verification stops the writers; it explains the
		// failure better than the cancellation they report.
		if verr != nil && (err == nil || errors.Is(err, errVerifyStopped)) {
			err = verr
		}
		if err == nil && ctx.Err() != nil {
			err = fmt.Errorf("verify: %w", context.Cause(ctx))
		}
	}
	res.Elapsed = time.Since(w.start)
	return res, err
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

	// check verifies what was written; nil with SkipVerify.
	check *verifier
	// syncs is the background flush, at most one at a time.
	syncs sync.WaitGroup

	mu sync.Mutex
	// settled maps the image offset of a finished piece, beyond the
	// contiguous prefix, to its end; low is where that prefix ends.
	settled map[int64]int64
	low     int64
	// flushedTo is the prefix covered by the last flush started; syncing
	// is set while it runs.
	flushedTo int64
	syncing   bool
	// sums are the checksums of written blocks not yet handed to check.
	sums []blockSum
}

// settle records that the image bytes [off, off+n) are on the target (or
// need no write) with the checksums of what was sent, and starts a
// background flush once SyncInterval bytes of the image's prefix are
// settled since the last one.
func (w *writer) settle(ctx context.Context, cancel context.CancelCauseFunc, off, n int64, sums []blockSum) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sums = append(w.sums, sums...)
	if w.settled == nil {
		w.settled = map[int64]int64{}
	}
	w.settled[off] = off + n
	for {
		end, ok := w.settled[w.low]
		if !ok {
			break
		}
		delete(w.settled, w.low)
		w.low = end
	}
	if w.syncing || w.low-w.flushedTo < w.o.SyncInterval || ctx.Err() != nil {
		return
	}
	// Only blocks wholly below the prefix were written before the flush
	// starts; the rest wait for a later one.
	limit := w.o.Offset + w.low
	var ready, later []blockSum
	for _, s := range w.sums {
		if s.off+int64(s.n) <= limit {
			ready = append(ready, s)
		} else {
			later = append(later, s)
		}
	}
	w.sums = later
	w.flushedTo = w.low
	w.syncing = true
	w.syncs.Add(1)
	go func() {
		defer w.syncs.Done()
		if err := syncTarget(w.dst); err != nil {
			cancel(fmt.Errorf("background %w", err))
		} else if w.check != nil {
			w.check.submit(ready)
		}
		w.mu.Lock()
		w.syncing = false
		w.mu.Unlock()
	}()
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
				var sums []blockSum
				if j.data != nil {
					sums, err = w.writeData(j)
					free <- j.data
				} else {
					if len(zbuf) == 0 {
						zbuf = make([]byte, w.o.ChunkSize)
					}
					err = w.zeroStale(j, zbuf)
				}
				if err != nil {
					cancel(err)
					continue
				}
				w.settle(ctx, cancel, j.off, j.length(), sums)
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
				w.settle(ctx, cancel, e.Offset, e.Length, nil)
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

// writeData writes a data job and returns the checksums of its blocks for
// verification (none with SkipVerify).
func (w *writer) writeData(j job) ([]blockSum, error) {
	at := w.o.Offset + j.off
	if _, err := w.dst.WriteAt(j.data, at); err != nil {
		return nil, fmt.Errorf("write %d bytes at offset %d: %w", len(j.data), at, err)
	}
	w.written.Add(int64(len(j.data)))
	w.done.Add(int64(len(j.data)))
	if w.check == nil {
		return nil, nil
	}
	sums := make([]blockSum, 0, (len(j.data)+image.BlockSize-1)/image.BlockSize)
	for i := 0; i < len(j.data); i += image.BlockSize {
		b := j.data[i:min(len(j.data), i+image.BlockSize)]
		sums = append(sums, blockSum{off: at + int64(i), n: int32(len(b)), sum: crc32.Checksum(b, castagnoli)})
	}
	return sums, nil
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

// verifier has several readers ask a ChecksumSource what the disk holds,
// each comparing with the checksums of what was written, and keeps the
// lowest offset found to differ.
type verifier struct {
	ctx     context.Context
	src     ChecksumSource
	groups  chan []blockSum
	readers sync.WaitGroup
	failed  func()

	verified atomic.Int64
	firstBad atomic.Int64 // -1: none found

	errMu sync.Mutex
	ioErr error
}

// startVerify starts workers readers on src; failed is called when a
// block reads back wrong or cannot be read, so the caller stops writing to
// a disk that failed.
func startVerify(ctx context.Context, src ChecksumSource, workers int, failed func()) *verifier {
	v := &verifier{ctx: ctx, src: src, groups: make(chan []blockSum), failed: failed}
	v.firstBad.Store(-1)
	for range workers {
		v.readers.Go(v.read)
	}
	return v
}

// submit queues blocks whose writes the target has flushed, grouped into
// contiguous spans of up to MaxChecksumSpan in which only the last block
// may be short, as a ChecksumSource reports them. Batches arrive in
// increasing offset order, so once a bad block is known nothing above it
// needs reading.
func (v *verifier) submit(sums []blockSum) {
	sort.Slice(sums, func(i, k int) bool { return sums[i].off < sums[k].off })
	for i := 0; i < len(sums); {
		if v.ctx.Err() != nil {
			return
		}
		if bad := v.firstBad.Load(); bad >= 0 && sums[i].off > bad {
			return
		}
		j := i
		for j+1 < len(sums) && sums[j].n == VerifyBlockSize && sums[j+1].off == sums[j].off+int64(sums[j].n) &&
			sums[j+1].off+int64(sums[j+1].n)-sums[i].off <= MaxChecksumSpan {
			j++
		}
		select {
		case v.groups <- sums[i : j+1]:
		case <-v.ctx.Done():
			return
		}
		i = j + 1
	}
}

func (v *verifier) read() {
	for g := range v.groups {
		start := g[0].off
		n := g[len(g)-1].off + int64(g[len(g)-1].n) - start
		got, err := v.src.Checksums(v.ctx, start, n, VerifyBlockSize)
		if err == nil && len(got) != len(g) {
			err = fmt.Errorf("%d checksums for %d blocks", len(got), len(g))
		}
		if err != nil {
			v.errMu.Lock()
			if v.ioErr == nil {
				v.ioErr = fmt.Errorf("verify %d bytes at offset %d: %w", n, start, err)
			}
			v.errMu.Unlock()
			v.failed()
			continue
		}
		for i, s := range g {
			if got[i] != s.sum {
				v.lowerBad(s.off)
				v.failed()
				break
			}
		}
		v.verified.Add(n)
	}
}

func (v *verifier) lowerBad(off int64) {
	for {
		cur := v.firstBad.Load()
		if cur >= 0 && cur <= off {
			return
		}
		if v.firstBad.CompareAndSwap(cur, off) {
			return
		}
	}
}

// finish waits for the reads queued so far and reports the bytes verified
// and the lowest bad block, else the first read error.
func (v *verifier) finish() (int64, error) {
	close(v.groups)
	v.readers.Wait()
	if bad := v.firstBad.Load(); bad >= 0 {
		return v.verified.Load(), fmt.Errorf("%w: data read back at offset %d differs from the data written", ErrVerify, bad)
	}
	v.errMu.Lock()
	defer v.errMu.Unlock()
	return v.verified.Load(), v.ioErr
}
