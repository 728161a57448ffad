package image

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Linux lseek whence values; holes in a sparse raw file are zero runs found
// without reading them.
const (
	seekData = 3
	seekHole = 4
)

type rawMapping struct {
	r    io.ReaderAt
	f    *os.File // set when r is a file that may have holes
	size int64
	// noSeekHole is set once the filesystem has shown it cannot answer
	// SEEK_DATA; everything is then data to be scanned.
	noSeekHole bool
}

func (r *rawMapping) nextRun(off int64) (int64, bool, error) {
	if r.f == nil || r.noSeekHole {
		return r.size - off, false, nil
	}
	data, err := r.f.Seek(off, seekData)
	if err != nil {
		if errors.Is(err, syscall.ENXIO) {
			// No data after off: the rest is a hole.
			return r.size - off, true, nil
		}
		r.noSeekHole = true
		return r.size - off, false, nil
	}
	if data > off {
		return data - off, true, nil
	}
	hole, err := r.f.Seek(off, seekHole)
	if err != nil || hole <= off {
		r.noSeekHole = true
		return r.size - off, false, nil
	}
	return hole - off, false, nil
}

func (r *rawMapping) readAt(p []byte, off int64) error {
	n, err := r.r.ReadAt(p, off)
	if err == io.EOF && n == len(p) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("read image at %d: %w", off, err)
	}
	return nil
}

// Raw presents size bytes of r as a raw image, for data that is not in a
// file of its own (a config drive in memory, a region of a larger file).
func Raw(r io.ReaderAt, size int64) Image {
	return &image{format: FormatRaw, size: size, m: &rawMapping{r: r, size: size}, c: io.NopCloser(nil)}
}
