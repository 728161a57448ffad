// Package erase overwrites disks the way a cleaning step must: a number of passes of
// random data, optionally followed by a pass of zeros (shred semantics), with large
// aligned writes kept in flight, then reads back a spread of samples and all of the
// first and last MiB to prove the overwrite reached the medium. WipeMetadata wipes
// partition tables and filesystem signatures only. Both work on any Disk: a local
// device or file (the agent, through O_DIRECT), or a LUN reached over iSCSI (the
// conductor, for a ramdisk that only exports its disk).
package erase

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"sync"
	"time"
)

const (
	// align satisfies O_DIRECT on any device (4Kn sectors included).
	align = 4096
	// edge is how much of each end of the disk is verified in full: partition
	// tables, boot loaders and filesystem superblocks live there.
	edge = 1 << 20
	// sampleSize is the size of one spread verification sample.
	sampleSize = 4096
	// flushEvery is how much a pass writes between background syncs. Over iSCSI the
	// target's writes to its disk then overlap the transfer instead of all waiting
	// for the sync at the end of the pass, as with (*iscsi.LUN).CopyFrom.
	flushEvery = 256 << 20
)

// Disk is what an erase works on: a local device or file, or a LUN over iSCSI
// (*iscsi.Device). WriteAt may be called from several goroutines at once with
// disjoint ranges; Sync makes everything written durable.
type Disk interface {
	io.ReaderAt
	io.WriterAt
	Size() int64
	Sync() error
}

// Options configures Overwrite and Device. The zero value is refused: it asks for
// no pass at all.
type Options struct {
	// Iterations is the number of random passes (shred --iterations).
	Iterations int
	// Zeroize adds a final pass of zeros (shred --zero).
	Zeroize bool
	// BlockSize is the write size; default 4 MiB, rounded up to 4 KiB.
	BlockSize int
	// Writers is the number of writes kept in flight, each writer generating its
	// own random blocks; default 2.
	Writers int
	// Samples is the number of spread samples read back besides the first and last
	// MiB; default 256.
	Samples int
	// Progress, when set, is called after each block with bytes written so far over
	// all passes and the total to write.
	Progress func(done, total int64)
	// Hook, when set, runs between the last pass and the verification.
	Hook Hook
}

// Hook lets a caller act on a disk after it has been overwritten and before it is
// verified (tests use it to damage the disk and prove verification catches it). It
// receives the name given to Overwrite (the path, for Device).
type Hook interface {
	BeforeVerify(device string) error
}

// Record describes a completed erase.
type Record struct {
	Method         string  `json:"method"`
	Passes         int     `json:"passes"`
	Bytes          int64   `json:"bytes"`
	Duration       float64 `json:"duration"`
	SamplesChecked int     `json:"samples_checked"`
}

// VerifyError reports data that differs from what the last pass wrote.
type VerifyError struct {
	Device string
	Offset int64
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("verification of %s failed: data at offset %d differs from what the last pass wrote", e.Device, e.Offset)
}

// pass is what one overwrite writes: zeros, or the AES-256-CTR keystream of a random
// key. The keystream at any 16-byte aligned offset is computed on its own, so
// verification regenerates only what it reads, and with AES-NI it is generated
// several times faster than ChaCha8 (about 3 GiB/s against 0.7 on one core here).
type pass struct {
	zero bool
	aes  cipher.Block
}

// fill writes the pass's bytes for disk offset off (a multiple of 16) into b.
func (p pass) fill(b []byte, off int64) {
	clear(b)
	if p.zero {
		return
	}
	var iv [aes.BlockSize]byte
	binary.BigEndian.PutUint64(iv[8:], uint64(off/aes.BlockSize))
	cipher.NewCTR(p.aes, iv[:]).XORKeyStream(b, b)
}

// Device overwrites the whole of path (a block device or a regular file) and verifies
// the result, writing through O_DIRECT where the filesystem allows it.
func Device(ctx context.Context, path string, opts Options) (Record, error) {
	d, err := openLocal(path)
	if err != nil {
		return Record{}, fmt.Errorf("erase %s: %w", path, err)
	}
	defer d.Close()
	return Overwrite(ctx, d, path, opts)
}

// Overwrite writes opts.Iterations passes of random data over the whole of d, then a
// pass of zeros when opts.Zeroize, syncing after each pass, and verifies the result:
// the first and last MiB in full and opts.Samples regions spread between them must
// hold what the last pass wrote, else the error is a *VerifyError. name identifies
// the disk in errors and to opts.Hook.
func Overwrite(ctx context.Context, d Disk, name string, opts Options) (Record, error) {
	if opts.BlockSize <= 0 {
		opts.BlockSize = 4 << 20
	}
	opts.BlockSize = (opts.BlockSize + align - 1) / align * align
	if opts.Writers <= 0 {
		opts.Writers = 2
	}
	if opts.Samples <= 0 {
		opts.Samples = 256
	}
	passes := make([]pass, 0, opts.Iterations+1)
	for range opts.Iterations {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return Record{}, fmt.Errorf("erase %s: %w", name, err)
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return Record{}, fmt.Errorf("erase %s: %w", name, err)
		}
		passes = append(passes, pass{aes: block})
	}
	if opts.Zeroize {
		passes = append(passes, pass{zero: true})
	}
	if len(passes) == 0 {
		return Record{}, fmt.Errorf("erase %s: no pass requested (0 iterations and no zero pass)", name)
	}
	start := time.Now()
	size := d.Size()
	total := size * int64(len(passes))
	var done int64
	for _, p := range passes {
		err := overwrite(ctx, d, p, opts, func(n int64) {
			done += n
			if opts.Progress != nil {
				opts.Progress(done, total)
			}
		})
		if err != nil {
			return Record{}, fmt.Errorf("erase %s: %w", name, err)
		}
	}
	if opts.Hook != nil {
		if err := opts.Hook.BeforeVerify(name); err != nil {
			return Record{}, fmt.Errorf("erase %s: %w", name, err)
		}
	}
	checked, err := verify(d, name, passes[len(passes)-1], opts.Samples)
	if err != nil {
		return Record{}, err
	}
	method := "shred"
	if opts.Iterations == 0 {
		method = "zero"
	}
	return Record{Method: method, Passes: len(passes), Bytes: size, Duration: time.Since(start).Seconds(),
		SamplesChecked: checked}, nil
}

// overwrite writes one pass over the whole disk with opts.Writers goroutines, each
// generating its next block and writing it, so several writes are in flight (over
// iSCSI each is split further into commands queued on the session) and the random
// stream is generated on every core. A sync runs in the background after every
// flushEvery bytes, one at a time.
func overwrite(ctx context.Context, d Disk, p pass, opts Options, progress func(int64)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	size := d.Size()
	// A zero pass writes one shared buffer of zeros.
	var zero []byte
	if p.zero {
		zero = alignedBuffer(opts.BlockSize)
	}
	offsets := make(chan int64)
	written := make(chan int64, opts.Writers)
	var (
		wg, flushes sync.WaitGroup
		flushing    sync.Mutex
		errOnce     sync.Once
		firstErr    error
	)
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel() })
	}
	for range opts.Writers {
		wg.Go(func() {
			buf := zero
			if !p.zero {
				buf = alignedBuffer(opts.BlockSize)
			}
			for off := range offsets {
				n := int(min(int64(opts.BlockSize), size-off))
				if !p.zero {
					p.fill(buf[:n], off)
				}
				if _, err := d.WriteAt(buf[:n], off); err != nil {
					fail(fmt.Errorf("write at %d: %w", off, err))
					continue
				}
				written <- int64(n)
			}
		})
	}
	go func() {
		defer close(offsets)
		for off := int64(0); off < size; off += int64(opts.BlockSize) {
			select {
			case offsets <- off:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() {
		wg.Wait()
		close(written)
	}()
	var unflushed int64
	for n := range written {
		progress(n)
		if unflushed += n; unflushed >= flushEvery && flushing.TryLock() {
			unflushed = 0
			flushes.Go(func() {
				defer flushing.Unlock()
				if err := d.Sync(); err != nil {
					fail(fmt.Errorf("background sync: %w", err))
				}
			})
		}
	}
	flushes.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return nil
}

// verify compares the first and last MiB and samples spread over the disk with the
// pass that was written last, and returns the number of regions checked.
func verify(d Disk, name string, p pass, samples int) (int, error) {
	size := d.Size()
	type region struct{ off, n int64 }
	regions := []region{{0, min(edge, size)}}
	if size > edge {
		tail := max(edge, size-edge) / align * align
		regions = append(regions, region{tail, size - tail})
	}
	if span := size / align * align; span > 2*edge {
		step := (span - 2*edge) / int64(samples)
		for i := range int64(samples) {
			off := edge + i*step
			if step > sampleSize {
				off += mrand.Int64N(step-sampleSize) / align * align
			}
			regions = append(regions, region{off / align * align, sampleSize})
		}
	}
	// The last region may reach past a MiB by the rounding of its start.
	got := alignedBuffer(edge + align)
	want := alignedBuffer(edge + align)
	for _, r := range regions {
		buf := got[:r.n]
		if err := readFull(d, buf, r.off); err != nil {
			return 0, fmt.Errorf("verify %s: %w", name, err)
		}
		exp := want[:r.n]
		p.fill(exp, r.off)
		if !bytes.Equal(buf, exp) {
			for i := range buf {
				if buf[i] != exp[i] {
					return 0, &VerifyError{Device: name, Offset: r.off + int64(i)}
				}
			}
		}
	}
	return len(regions), nil
}

// readFull reads len(b) bytes at off; io.EOF with all of them read is success, as
// io.ReaderAt allows it at the end of the disk.
func readFull(d Disk, b []byte, off int64) error {
	n, err := d.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("read %d bytes at %d: %w", len(b), off, err)
}

// alignedBuffer returns n bytes starting at a 4 KiB boundary, as O_DIRECT requires.
func alignedBuffer(n int) []byte {
	b := make([]byte, n+align)
	skip := 0
	if r := int(uintptrOf(b) % align); r != 0 {
		skip = align - r
	}
	return b[skip : skip+n : skip+n]
}
