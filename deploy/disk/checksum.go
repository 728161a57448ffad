package disk

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/ferricbm/ferric/deploy/image"
)

// castagnoli is CRC-32C, the checksum iSCSI's own digests use: computed in
// hardware at several GB/s, so checking costs the conductor almost no CPU
// next to SHA-256, and per 64 KiB block it misses a corruption with a
// chance of 2^-32.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// VerifyBlockSize is the block each written checksum covers.
const VerifyBlockSize = image.BlockSize

// MaxChecksumSpan is the most bytes one Checksums call is asked about.
const MaxChecksumSpan = 4 << 20

// A ChecksumSource reports what a disk holds, as the CRC-32C of each
// blockSize-byte block of its bytes [off, off+n), the last block shorter
// when n is not a multiple of blockSize. Verification compares them with
// the checksums of what was written.
type ChecksumSource interface {
	Checksums(ctx context.Context, off, n int64, blockSize int) ([]uint32, error)
}

// ReadBack is the ChecksumSource that reads the blocks back from a reader
// (the target written to, or the disk itself on the node) and checksums
// them here.
type ReadBack struct {
	R io.ReaderAt
}

var readBackBufs = sync.Pool{New: func() any { b := make([]byte, MaxChecksumSpan); return &b }}

// Checksums reads [off, off+n) in pieces of at most MaxChecksumSpan and
// checksums each block.
func (rb ReadBack) Checksums(ctx context.Context, off, n int64, blockSize int) ([]uint32, error) {
	if off < 0 || n < 0 || blockSize <= 0 || blockSize > MaxChecksumSpan {
		return nil, fmt.Errorf("checksums of %d bytes at offset %d in blocks of %d: invalid span", n, off, blockSize)
	}
	bp := readBackBufs.Get().(*[]byte)
	defer readBackBufs.Put(bp)
	piece := int64(MaxChecksumSpan / blockSize * blockSize)
	sums := make([]uint32, 0, (n+int64(blockSize)-1)/int64(blockSize))
	for done := int64(0); done < n; done += piece {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p := (*bp)[:min(piece, n-done)]
		at := off + done
		// io.ReaderAt may report EOF with a full read at the end of the disk.
		if got, err := rb.R.ReadAt(p, at); err != nil && !(errors.Is(err, io.EOF) && got == len(p)) {
			return nil, fmt.Errorf("read %d bytes at offset %d: %w", len(p), at, err)
		}
		for i := 0; i < len(p); i += blockSize {
			sums = append(sums, crc32.Checksum(p[i:min(len(p), i+blockSize)], castagnoli))
		}
	}
	return sums, nil
}
