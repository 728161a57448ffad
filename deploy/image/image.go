// Package image reads disk images (raw and qcow2) as a sequence of extents
// so that only the bytes that carry data travel to a node's disk, and keeps a
// content-addressed cache of downloaded images shared by all nodes.
package image

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// Formats returned by Detect and Image.Format.
const (
	FormatRaw   = "raw"
	FormatQcow2 = "qcow2"
)

// BlockSize is the granularity of zero detection: a block is skipped only if
// every byte in it is zero. 64 KiB keeps writes large (good for iSCSI) while
// still finding the holes a filesystem image leaves.
const BlockSize = 64 << 10

// maxExtent bounds the bytes of one data extent so that a consumer holds at
// most this much per extent in memory.
const maxExtent = 4 << 20

// Errors callers may test for with errors.Is.
var (
	ErrUnsupported = errors.New("unsupported image")
	ErrCorrupt     = errors.New("corrupt image")
)

// Extent is a run of the virtual disk. A Zero extent reads as zeros and
// carries no data; otherwise Data holds exactly Length bytes. Data is only
// valid until the callback that received it returns.
type Extent struct {
	Offset int64
	Length int64
	Zero   bool
	Data   []byte
}

// Image is an opened disk image. It is not safe for concurrent use: each
// walk keeps its own position in the image's tables.
type Image interface {
	Format() string
	VirtualSize() int64
	// Extents calls fn for consecutive, non-overlapping extents covering
	// [0, VirtualSize()) in increasing offset order. Data extents are at most
	// 4 MiB; adjacent zero runs are merged. An error from fn stops the walk
	// and is returned as is.
	Extents(fn func(Extent) error) error
	Close() error
}

// mapping is a format's view of where its data lives; extentWalker turns
// it into Extents, detecting zero blocks inside data.
type mapping interface {
	// nextRun describes the run starting at off: its length and whether it
	// is known to read as zeros without looking at it.
	nextRun(off int64) (length int64, zero bool, err error)
	// readAt fills p with virtual-disk bytes at off; [off, off+len(p)) lies
	// within one run that nextRun reported as data.
	readAt(p []byte, off int64) error
}

type foreignMagic struct {
	off   int64
	magic []byte
	name  string
}

// Formats we recognise only to refuse them: writing one of these as if it
// were raw would silently produce an unbootable disk.
var foreign = []foreignMagic{
	{0, []byte("KDMV"), "vmdk"},
	{0, []byte("# Disk DescriptorFile"), "vmdk"},
	{0, []byte("vhdxfile"), "vhdx"},
	{0, []byte("conectix"), "vpc"},
	{0, []byte("QED\x00"), "qed"},
	{0, []byte("LUKS\xba\xbe"), "luks"},
	{64, []byte{0x7f, 0x10, 0xda, 0xbe}, "vdi"},
}

// Detect reports the format of the image at path from its magic bytes.
// Formats other than raw and qcow2 that are recognised yield ErrUnsupported.
func Detect(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("detect image format: %w", err)
	}
	defer f.Close()
	return detect(f)
}

func detect(r io.ReaderAt) (string, error) {
	head := make([]byte, 128)
	n, err := r.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("detect image format: %w", err)
	}
	head = head[:n]
	if bytes.HasPrefix(head, qcow2Magic) {
		return FormatQcow2, nil
	}
	for _, m := range foreign {
		end := m.off + int64(len(m.magic))
		if int64(len(head)) >= end && bytes.Equal(head[m.off:end], m.magic) {
			return "", fmt.Errorf("%w: %s images are not supported, convert to raw or qcow2", ErrUnsupported, m.name)
		}
	}
	return FormatRaw, nil
}

// Open opens the image at path, detecting its format.
func Open(path string) (Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open image: %w", err)
	}
	img, err := open(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open image %s: %w", path, err)
	}
	return img, nil
}

func open(f *os.File) (Image, error) {
	format, err := detect(f)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if format == FormatQcow2 {
		q, err := parseQcow2(f, st.Size())
		if err != nil {
			return nil, err
		}
		return &image{format: format, size: q.size, m: q, c: f}, nil
	}
	return &image{format: format, size: st.Size(), m: &rawMapping{r: f, f: f, size: st.Size()}, c: f}, nil
}

type image struct {
	format string
	size   int64
	m      mapping
	c      io.Closer
}

func (i *image) Format() string     { return i.format }
func (i *image) VirtualSize() int64 { return i.size }
func (i *image) Close() error       { return i.c.Close() }
func (i *image) Extents(fn func(Extent) error) error {
	return walk(i.m, i.size, fn)
}

// walk emits extents, merging adjacent zero runs and splitting data runs into
// block-aligned pieces of at most maxExtent, with all-zero blocks turned into
// zero runs.
func walk(m mapping, size int64, fn func(Extent) error) error {
	buf := make([]byte, maxExtent)
	var zeroStart, zeroLen int64
	flushZero := func() error {
		if zeroLen == 0 {
			return nil
		}
		e := Extent{Offset: zeroStart, Length: zeroLen, Zero: true}
		zeroLen = 0
		return fn(e)
	}
	addZero := func(off, n int64) error {
		if zeroLen > 0 && zeroStart+zeroLen == off {
			zeroLen += n
			return nil
		}
		if err := flushZero(); err != nil {
			return err
		}
		zeroStart, zeroLen = off, n
		return nil
	}
	for off := int64(0); off < size; {
		n, zero, err := m.nextRun(off)
		if err != nil {
			return err
		}
		if n <= 0 || n > size-off {
			n = size - off
		}
		if zero {
			if err := addZero(off, n); err != nil {
				return err
			}
			off += n
			continue
		}
		end := off + n
		for off < end {
			// Align pieces to maxExtent boundaries so extents of the same
			// image are identical however the runs fall.
			piece := min(end-off, maxExtent-off%maxExtent)
			p := buf[:piece]
			if err := m.readAt(p, off); err != nil {
				return err
			}
			if err := emitData(p, off, addZero, flushZero, fn); err != nil {
				return err
			}
			off += piece
		}
	}
	return flushZero()
}

// emitData splits p (virtual offset off) into zero blocks and data runs.
func emitData(p []byte, off int64, addZero func(off, n int64) error, flushZero func() error, fn func(Extent) error) error {
	dataStart := -1
	emit := func(end int) error {
		if dataStart < 0 {
			return nil
		}
		if err := flushZero(); err != nil {
			return err
		}
		d := p[dataStart:end]
		e := Extent{Offset: off + int64(dataStart), Length: int64(len(d)), Data: d}
		dataStart = -1
		return fn(e)
	}
	for i := 0; i < len(p); {
		// Blocks are aligned on the virtual disk, not within p.
		j := min(len(p), i+int(BlockSize-(off+int64(i))%BlockSize))
		if IsZero(p[i:j]) {
			if err := emit(i); err != nil {
				return err
			}
			if err := addZero(off+int64(i), int64(j-i)); err != nil {
				return err
			}
		} else if dataStart < 0 {
			dataStart = i
		}
		i = j
	}
	return emit(len(p))
}

var zeroPage [BlockSize]byte

// IsZero reports whether every byte of p is zero.
func IsZero(p []byte) bool {
	for len(p) > 0 {
		n := min(len(p), len(zeroPage))
		if !bytes.Equal(p[:n], zeroPage[:n]) {
			return false
		}
		p = p[n:]
	}
	return true
}
