package image

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"io"
)

var qcow2Magic = []byte{'Q', 'F', 'I', 0xfb}

// Header feature bits (qcow2 spec, "incompatible_features").
const (
	incompatDirty        = 1 << 0
	incompatCorrupt      = 1 << 1
	incompatExternalData = 1 << 2
	incompatCompression  = 1 << 3
	incompatExtendedL2   = 1 << 4
)

// L1/L2 entry fields.
const (
	offsetMask     = 0x00fffffffffffe00 // bits 9-55
	l2Compressed   = 1 << 62
	l2ZeroFlag     = 1
	maxL1Bytes     = 32 << 20 // QEMU's own limit on the L1 table
	maxBackingName = 1023
	maxVirtualSize = 1 << 56 // keeps offset arithmetic far from overflow
)

type qcow2 struct {
	r           io.ReaderAt
	fileSize    int64
	version     uint32
	clusterBits uint32
	clusterSize int64
	size        int64
	l1          []uint64
	l2Entries   int64

	// The L2 table last used: reads are sequential, so one is enough.
	l2Off   uint64
	l2      []uint64
	l2raw   []byte
	cluster []byte // decompression output
	cbuf    []byte // compressed input
	zr      io.ReadCloser
}

func parseQcow2(r io.ReaderAt, fileSize int64) (*qcow2, error) {
	h := make([]byte, 104)
	n, err := r.ReadAt(h, 0)
	if n < 72 {
		return nil, fmt.Errorf("%w: qcow2 header truncated", ErrCorrupt)
	}
	if err != nil && err != io.EOF {
		return nil, err
	}
	be := binary.BigEndian
	q := &qcow2{r: r, fileSize: fileSize, version: be.Uint32(h[4:])}
	if q.version != 2 && q.version != 3 {
		return nil, fmt.Errorf("%w: qcow2 version %d", ErrUnsupported, q.version)
	}
	backingOff, backingLen := be.Uint64(h[8:]), be.Uint32(h[16:])
	q.clusterBits = be.Uint32(h[20:])
	q.size = int64(be.Uint64(h[24:]))
	crypt := be.Uint32(h[32:])
	l1Size := be.Uint32(h[36:])
	l1Off := be.Uint64(h[40:])

	if q.clusterBits < 9 || q.clusterBits > 21 {
		return nil, fmt.Errorf("%w: qcow2 cluster_bits %d", ErrCorrupt, q.clusterBits)
	}
	q.clusterSize = 1 << q.clusterBits
	q.l2Entries = q.clusterSize / 8
	if q.size < 0 || q.size > maxVirtualSize {
		return nil, fmt.Errorf("%w: qcow2 virtual size out of range", ErrCorrupt)
	}
	if backingOff != 0 {
		name := ""
		if backingLen <= maxBackingName && int64(backingOff) >= 0 && int64(backingOff)+int64(backingLen) <= fileSize {
			b := make([]byte, backingLen)
			if _, err := r.ReadAt(b, int64(backingOff)); err == nil {
				name = string(b)
			}
		}
		return nil, fmt.Errorf("%w: qcow2 image has a backing file %q; flatten it first (qemu-img convert)", ErrUnsupported, name)
	}
	if crypt != 0 {
		return nil, fmt.Errorf("%w: encrypted qcow2 images (method %d) are not supported", ErrUnsupported, crypt)
	}
	if q.version == 3 {
		if n < 104 {
			return nil, fmt.Errorf("%w: qcow2 v3 header truncated", ErrCorrupt)
		}
		incompat := be.Uint64(h[72:])
		hdrLen := be.Uint32(h[100:])
		if hdrLen < 104 || int64(hdrLen) > q.clusterSize {
			return nil, fmt.Errorf("%w: qcow2 header_length %d", ErrCorrupt, hdrLen)
		}
		switch {
		case incompat&incompatCorrupt != 0:
			return nil, fmt.Errorf("%w: qcow2 image is marked corrupt", ErrCorrupt)
		case incompat&incompatExternalData != 0:
			return nil, fmt.Errorf("%w: qcow2 images with an external data file are not supported", ErrUnsupported)
		case incompat&incompatExtendedL2 != 0:
			return nil, fmt.Errorf("%w: qcow2 images with extended L2 entries (subclusters) are not supported", ErrUnsupported)
		case incompat&incompatCompression != 0:
			return nil, fmt.Errorf("%w: qcow2 compression types other than deflate are not supported", ErrUnsupported)
		case incompat&^uint64(incompatDirty) != 0:
			return nil, fmt.Errorf("%w: qcow2 incompatible features %#x", ErrUnsupported, incompat)
		}
		// A dirty image has stale refcounts only; the L1/L2 tables we read
		// are always consistent.
	}

	coverage := q.clusterSize * q.l2Entries // bytes one L1 entry maps
	need := (q.size + coverage - 1) / coverage
	if int64(l1Size) < need {
		return nil, fmt.Errorf("%w: qcow2 L1 table has %d entries, %d needed for %d bytes", ErrCorrupt, l1Size, need, q.size)
	}
	if int64(l1Size)*8 > maxL1Bytes {
		return nil, fmt.Errorf("%w: qcow2 L1 table too large (%d entries)", ErrCorrupt, l1Size)
	}
	// Only the entries that map the virtual disk are read.
	l1Bytes := need * 8
	if l1Off%uint64(q.clusterSize) != 0 || !q.within(l1Off, l1Bytes) {
		return nil, fmt.Errorf("%w: qcow2 L1 table at %#x lies outside the file", ErrCorrupt, l1Off)
	}
	raw := make([]byte, l1Bytes)
	if _, err := r.ReadAt(raw, int64(l1Off)); err != nil && err != io.EOF {
		return nil, fmt.Errorf("read qcow2 L1 table: %w", err)
	}
	q.l1 = make([]uint64, need)
	for i := range q.l1 {
		q.l1[i] = be.Uint64(raw[i*8:])
	}
	return q, nil
}

// within reports whether [off, off+n) lies inside the file.
func (q *qcow2) within(off uint64, n int64) bool {
	return off < 1<<62 && int64(off)+n <= q.fileSize
}

// l2Entry returns the L2 entry for the cluster holding virtual offset off
// (0 when the L1 entry is unallocated).
func (q *qcow2) l2Entry(off int64) (uint64, error) {
	ci := off >> q.clusterBits
	l1e := q.l1[ci/q.l2Entries]
	l2Off := l1e & offsetMask
	if l2Off == 0 {
		return 0, nil
	}
	if l2Off != q.l2Off || q.l2 == nil {
		if l2Off%uint64(q.clusterSize) != 0 || !q.within(l2Off, q.clusterSize) {
			return 0, fmt.Errorf("%w: qcow2 L2 table at %#x lies outside the file", ErrCorrupt, l2Off)
		}
		q.l2Off = 0 // the cached table is invalid until fully loaded
		if q.l2raw == nil {
			q.l2raw = make([]byte, q.clusterSize)
		}
		raw := q.l2raw
		if _, err := q.r.ReadAt(raw, int64(l2Off)); err != nil && err != io.EOF {
			return 0, fmt.Errorf("read qcow2 L2 table: %w", err)
		}
		if q.l2 == nil {
			q.l2 = make([]uint64, q.l2Entries)
		}
		for i := range q.l2 {
			q.l2[i] = binary.BigEndian.Uint64(raw[i*8:])
		}
		q.l2Off = l2Off
	}
	return q.l2[ci%q.l2Entries], nil
}

// clusterZero reports whether the cluster with L2 entry e reads as zeros
// without looking at data: unallocated (no backing file) or a zero cluster.
func (q *qcow2) clusterZero(e uint64) bool {
	if e&l2Compressed != 0 {
		return false
	}
	if q.version >= 3 && e&l2ZeroFlag != 0 {
		return true
	}
	return e&offsetMask == 0
}

func (q *qcow2) nextRun(off int64) (int64, bool, error) {
	e, err := q.l2Entry(off)
	if err != nil {
		return 0, false, err
	}
	zero := q.clusterZero(e)
	end := off&^(q.clusterSize-1) + q.clusterSize
	// Extend over following clusters of the same kind; data runs stop at
	// maxExtent so one call stays cheap, zero runs may span the disk.
	for end < q.size && (zero || end-off < maxExtent) {
		ci := end >> q.clusterBits
		if q.l1[ci/q.l2Entries]&offsetMask == 0 {
			if !zero {
				break
			}
			// A missing L2 table maps a whole L1 span to zeros.
			end = (ci/q.l2Entries + 1) * q.l2Entries << q.clusterBits
			continue
		}
		e, err := q.l2Entry(end)
		if err != nil {
			return 0, false, err
		}
		if q.clusterZero(e) != zero {
			break
		}
		end += q.clusterSize
	}
	return min(end, q.size) - off, zero, nil
}

func (q *qcow2) readAt(p []byte, off int64) error {
	for len(p) > 0 {
		e, err := q.l2Entry(off)
		if err != nil {
			return err
		}
		inCluster := off & (q.clusterSize - 1)
		n := min(int64(len(p)), q.clusterSize-inCluster)
		switch {
		case e&l2Compressed != 0:
			if err := q.readCompressed(e); err != nil {
				return fmt.Errorf("qcow2 cluster at virtual offset %d: %w", off, err)
			}
			copy(p[:n], q.cluster[inCluster:])
		case q.clusterZero(e):
			clear(p[:n])
		default:
			host := e & offsetMask
			if host%uint64(q.clusterSize) != 0 || !q.within(host, 1) {
				return fmt.Errorf("%w: qcow2 data cluster at %#x lies outside the file", ErrCorrupt, host)
			}
			// Coalesce following clusters that are contiguous in the file
			// into one read.
			for n < int64(len(p)) {
				next, err := q.l2Entry(off + n)
				if err != nil {
					return err
				}
				nextHost := next & offsetMask
				if next&l2Compressed != 0 || q.clusterZero(next) || nextHost != host+uint64(inCluster+n) || !q.within(nextHost, 1) {
					break
				}
				n = min(int64(len(p)), n+q.clusterSize)
			}
			if err := q.readHost(p[:n], int64(host)+inCluster); err != nil {
				return err
			}
		}
		p = p[n:]
		off += n
	}
	return nil
}

// readHost reads file bytes; a cluster that the file ends inside reads as
// zeros past the end, as QEMU does.
func (q *qcow2) readHost(p []byte, off int64) error {
	m, err := q.r.ReadAt(p, off)
	if err != nil && err != io.EOF {
		return fmt.Errorf("read qcow2 data at %d: %w", off, err)
	}
	if m < len(p) {
		if off+int64(m) < q.fileSize {
			return fmt.Errorf("read qcow2 data at %d: short read", off)
		}
		clear(p[m:])
	}
	return nil
}

// readCompressed inflates the cluster described by e into q.cluster.
func (q *qcow2) readCompressed(e uint64) error {
	shift := 62 - (q.clusterBits - 8)
	host := e & (1<<shift - 1)
	sectors := (e>>shift)&(1<<(q.clusterBits-8)-1) + 1
	csize := int64(sectors)*512 - int64(host&511)
	if host >= uint64(q.fileSize) {
		return fmt.Errorf("%w: compressed cluster at %#x lies outside the file", ErrCorrupt, host)
	}
	// The size is counted in whole sectors, so the last compressed cluster
	// may claim bytes beyond the end of the file.
	csize = min(csize, q.fileSize-int64(host))
	if q.cluster == nil {
		q.cluster = make([]byte, q.clusterSize)
	}
	if int64(cap(q.cbuf)) < csize {
		q.cbuf = make([]byte, csize)
	}
	in := q.cbuf[:csize]
	if _, err := q.r.ReadAt(in, int64(host)); err != nil && err != io.EOF {
		return fmt.Errorf("read compressed cluster: %w", err)
	}
	// Inflaters are costly to set up; one is reset per cluster.
	if q.zr == nil {
		q.zr = flate.NewReader(bytes.NewReader(in))
	} else if err := q.zr.(flate.Resetter).Reset(bytes.NewReader(in), nil); err != nil {
		return err
	}
	if _, err := io.ReadFull(q.zr, q.cluster); err != nil {
		return fmt.Errorf("%w: inflate compressed cluster at %#x: %w", ErrCorrupt, host, err)
	}
	return nil
}
