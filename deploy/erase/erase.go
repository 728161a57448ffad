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
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"sync"
	"time"
)

const (
	// align satisfies O_DIRECT on any device (4Kn sectors included).
	align = 4096
	// stripe is the unit of the random stream: stripe i of a pass is generated from
	// the pass key and i alone, so verification regenerates one sample's stripe
	// instead of the whole pass.
	stripe = 64 << 10
	// edge is how much of each end of the disk is verified in full: partition
	// tables, boot loaders and filesystem superblocks live there.
	edge = 1 << 20
	// sampleSize is the size of one spread verification sample.
	sampleSize = 4096
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

// Options configures Overwrite and Device. The zero value runs one random pass and no zero pass.
type Options struct {
	// Iterations is the number of random passes (shred --iterations).
	Iterations int
	// Zeroize adds a final pass of zeros (shred --zero).
	Zeroize bool
	// BlockSize is the write size; default 4 MiB, rounded up to 64 KiB.
	BlockSize int
	// Writers is the number of writes kept in flight; default 2.
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

// pass is what one overwrite writes: zeros, or the random stream of key.
type pass struct {
	zero bool
	key  [32]byte
}

// fill writes the pass's bytes for disk offset off (stripe aligned) into b.
func (p pass) fill(b []byte, off int64) {
	if p.zero {
		clear(b)
		return
	}
	for len(b) > 0 {
		n := min(len(b), stripe)
		seed := p.key
		binary.LittleEndian.PutUint64(seed[:8], binary.LittleEndian.Uint64(seed[:8])^uint64(off/stripe))
		_, _ = mrand.NewChaCha8(seed).Read(b[:n])
		b, off = b[n:], off+int64(n)
	}
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
	opts.BlockSize = (opts.BlockSize + stripe - 1) / stripe * stripe
	if opts.Writers <= 0 {
		opts.Writers = 2
	}
	if opts.Samples <= 0 {
		opts.Samples = 256
	}
	passes := make([]pass, 0, opts.Iterations+1)
	for range opts.Iterations {
		var p pass
		if _, err := rand.Read(p.key[:]); err != nil {
			return Record{}, fmt.Errorf("erase %s: %w", name, err)
		}
		passes = append(passes, p)
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

// block is one write: a buffer and where it goes.
type block struct {
	buf []byte
	off int64
	n   int
}

// overwrite writes one pass over the whole disk: a generator fills aligned buffers
// while opts.Writers goroutines write them, so generating random data and writing
// overlap, and several writes are in flight (over iSCSI each is split further into
// commands queued on the session).
func overwrite(ctx context.Context, d Disk, p pass, opts Options, progress func(int64)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	size := d.Size()
	// A zero pass writes one shared buffer of zeros; a random pass fills one buffer
	// per write in flight plus one being generated.
	free := make(chan []byte, opts.Writers+1)
	var zero []byte
	if p.zero {
		zero = alignedBuffer(opts.BlockSize)
	} else {
		for range opts.Writers + 1 {
			free <- alignedBuffer(opts.BlockSize)
		}
	}
	work := make(chan block)
	written := make(chan int64, opts.Writers)
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel() })
	}
	for range opts.Writers {
		wg.Go(func() {
			for b := range work {
				if _, err := d.WriteAt(b.buf[:b.n], b.off); err != nil {
					fail(fmt.Errorf("write at %d: %w", b.off, err))
				}
				if !p.zero {
					free <- b.buf
				}
				written <- int64(b.n)
			}
		})
	}
	go func() {
		defer close(work)
		for off := int64(0); off < size; off += int64(opts.BlockSize) {
			n := int(min(int64(opts.BlockSize), size-off))
			buf := zero
			if !p.zero {
				select {
				case buf = <-free:
				case <-ctx.Done():
					return
				}
				p.fill(buf[:n], off)
			}
			select {
			case work <- block{buf: buf, off: off, n: n}:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() {
		wg.Wait()
		close(written)
	}()
	for n := range written {
		progress(n)
	}
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
	got := alignedBuffer(edge + stripe)
	want := alignedBuffer(edge + 2*stripe)
	for _, r := range regions {
		buf := got[:r.n]
		if err := readFull(d, buf, r.off); err != nil {
			return 0, fmt.Errorf("verify %s: %w", name, err)
		}
		// The expected bytes are generated from the stripe holding r.off.
		base := r.off / stripe * stripe
		exp := want[:r.off-base+r.n]
		p.fill(exp, base)
		exp = exp[r.off-base:]
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
	if err == nil || err == io.EOF {
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
