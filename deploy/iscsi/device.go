package iscsi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Device adapts a LUN to io.ReaderAt and io.WriterAt at byte granularity. Block-aligned
// spans go to the LUN directly; partial blocks at the edges are read, patched and written
// back. All calls use the context given to (*LUN).Device.
type Device struct {
	l   *LUN
	ctx context.Context
	// rmw serialises read-modify-write of edge blocks, so two WriteAt calls with disjoint
	// byte ranges that share a block (allowed by io.WriterAt) do not undo each other.
	rmw sync.Mutex
}

// Device returns a byte-addressed view of l whose calls are bounded by ctx.
func (l *LUN) Device(ctx context.Context) *Device { return &Device{l: l, ctx: ctx} }

// Size returns the capacity in bytes.
func (d *Device) Size() int64 { return d.l.Size() }

// BlockSize returns the logical block length in bytes.
func (d *Device) BlockSize() int { return d.l.blockSize }

// Sync flushes the target's write cache.
func (d *Device) Sync() error { return d.l.Sync(d.ctx) }

// ReadAt implements io.ReaderAt; a read reaching past the end returns io.EOF with the
// bytes before it.
func (d *Device) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("iscsi read at negative offset %d", off)
	}
	size := d.Size()
	if off >= size {
		return 0, io.EOF
	}
	want := p
	if int64(len(p)) > size-off {
		want = p[:size-off]
	}
	err := d.span(off, len(want), func(lba uint64, head, n int, dst int) error {
		if head == 0 && n%d.l.blockSize == 0 {
			return d.l.Read(d.ctx, lba, want[dst:dst+n])
		}
		blk := make([]byte, d.l.blockSize)
		if err := d.l.Read(d.ctx, lba, blk); err != nil {
			return err
		}
		copy(want[dst:dst+n], blk[head:])
		return nil
	})
	if err != nil {
		return 0, err
	}
	if len(want) < len(p) {
		return len(want), io.EOF
	}
	return len(p), nil
}

// WriteAt implements io.WriterAt. Nothing is written when the range passes the end.
func (d *Device) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off > d.Size() || int64(len(p)) > d.Size()-off {
		return 0, fmt.Errorf("%w: write of %d bytes at %d, size %d", ErrOutOfRange, len(p), off, d.Size())
	}
	err := d.span(off, len(p), func(lba uint64, head, n int, src int) error {
		if head == 0 && n%d.l.blockSize == 0 {
			return d.l.Write(d.ctx, lba, p[src:src+n])
		}
		d.rmw.Lock()
		defer d.rmw.Unlock()
		blk := make([]byte, d.l.blockSize)
		if err := d.l.Read(d.ctx, lba, blk); err != nil {
			return err
		}
		copy(blk[head:head+n], p[src:src+n])
		return d.l.Write(d.ctx, lba, blk)
	})
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// span cuts the byte range [off, off+n) into a partial head block, an aligned middle and
// a partial tail block, calling fn for each non-empty piece with its first LBA, the byte
// offset inside that block, its length and its offset in the caller's buffer.
func (d *Device) span(off int64, n int, fn func(lba uint64, head, length, pos int) error) error {
	bs := int64(d.l.blockSize)
	pos := 0
	if head := int(off % bs); head != 0 && n > 0 {
		k := min(n, int(bs)-head)
		if err := fn(uint64(off/bs), head, k, 0); err != nil {
			return err
		}
		pos, off = k, off+int64(k)
	}
	if mid := (n - pos) / int(bs) * int(bs); mid > 0 {
		if err := fn(uint64(off/bs), 0, mid, pos); err != nil {
			return err
		}
		pos, off = pos+mid, off+int64(mid)
	}
	if rest := n - pos; rest > 0 {
		return fn(uint64(off/bs), 0, rest, pos)
	}
	return nil
}

// CopyFrom writes everything r yields to the LUN from byte offset off (block-aligned)
// on, reading ahead into up to QueueDepth buffers of MaxTransferLength so that many
// commands are in flight while r is read. A final partial block is merged with the
// bytes already on the LUN. It returns the number of bytes known to be written: on error,
// everything before that count is on the LUN.
func (l *LUN) CopyFrom(ctx context.Context, off int64, r io.Reader) (int64, error) {
	bs := int64(l.blockSize)
	if off < 0 || off%bs != 0 {
		return 0, fmt.Errorf("iscsi copy to offset %d: not a multiple of the %d-byte block", off, bs)
	}
	depth := l.s.opts.QueueDepth
	free := make(chan []byte, depth)
	for range depth {
		free <- make([]byte, l.chunk)
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		failAt  = int64(-1) // lowest offset (relative to off) of a failed command
		failErr error
		failed  = make(chan struct{})
	)
	record := func(at int64, err error) {
		mu.Lock()
		defer mu.Unlock()
		if failAt < 0 {
			close(failed)
		}
		if failAt < 0 || at < failAt {
			failAt, failErr = at, err
		}
	}
	var pos, flushedAt int64
	var flushing sync.Mutex // at most one background flush at a time
	flushEvery := l.s.opts.FlushInterval
	var readErr error
	var tail []byte
loop:
	for {
		var buf []byte
		select {
		case buf = <-free:
		case <-failed:
			break loop
		case <-ctx.Done():
			readErr = context.Cause(ctx)
			break loop
		}
		n, err := io.ReadFull(r, buf)
		if off+pos+int64(n) > l.Size() {
			readErr = fmt.Errorf("%w: source is larger than the %d-byte LUN", ErrOutOfRange, l.Size())
			break
		}
		aligned := n - n%int(bs)
		if aligned > 0 {
			at := pos
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := l.Write(ctx, uint64((off+at)/bs), buf[:aligned]); err != nil {
					record(at, err)
				}
				free <- buf
			}()
		}
		if aligned < n {
			tail = buf[aligned:n]
		}
		pos += int64(n)
		if flushEvery > 0 && pos-flushedAt >= flushEvery && flushing.TryLock() {
			flushedAt = pos
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer flushing.Unlock()
				if err := l.Sync(ctx); err != nil {
					if key, ok := SenseKey(err); !ok || key != SenseIllegalRequest {
						record(0, fmt.Errorf("background flush: %w", err))
					}
				}
			}()
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			readErr = fmt.Errorf("read source: %w", err)
			break
		}
	}
	wg.Wait()
	if failAt >= 0 {
		return failAt, failErr
	}
	if readErr != nil {
		return pos - int64(len(tail)), readErr
	}
	if len(tail) > 0 {
		at := pos - int64(len(tail))
		if _, err := l.Device(ctx).WriteAt(tail, off+at); err != nil {
			return at, err
		}
	}
	return pos, nil
}

var _ interface {
	io.ReaderAt
	io.WriterAt
} = (*Device)(nil)
