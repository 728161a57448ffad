package erase

import (
	"fmt"
	"io"
	"os"
	"syscall"
	"unsafe"
)

// local is an open device or file. Writes and reads of whole aligned blocks go
// through a descriptor opened with O_DIRECT when the filesystem supports it (tmpfs
// does not), so an erase neither fills nor is served from the page cache; the rest
// goes through a buffered one.
type local struct {
	path   string
	f      *os.File
	direct *os.File
	size   int64
}

func openLocal(path string) (*local, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("size of %s: %w", path, err)
	}
	d := &local{path: path, f: f, size: size}
	if direct, err := os.OpenFile(path, os.O_RDWR|syscall.O_DIRECT, 0); err == nil {
		d.direct = direct
	}
	return d, nil
}

func (d *local) Close() error {
	if d.direct != nil {
		d.direct.Close()
	}
	return d.f.Close()
}

func (d *local) pick(b []byte, off int64) *os.File {
	if d.direct != nil && off%align == 0 && len(b)%align == 0 && uintptrOf(b)%align == 0 {
		return d.direct
	}
	return d.f
}

func (d *local) Size() int64 { return d.size }

func (d *local) WriteAt(b []byte, off int64) (int, error) { return d.pick(b, off).WriteAt(b, off) }

func (d *local) ReadAt(b []byte, off int64) (int, error) { return d.pick(b, off).ReadAt(b, off) }

func (d *local) Sync() error { return d.f.Sync() }

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// blkRRPart is the BLKRRPART ioctl: re-read the partition table.
const blkRRPart = 0x125f

// rereadPartitions asks the kernel to drop the partitions of a block device whose
// table was just wiped, as wipefs does after erasing one. Like wipefs it goes on when
// the kernel refuses: a partition still in use, or a device without partition
// scanning (a plain loop device) keeps its partitions, but not their contents.
func (d *local) rereadPartitions() {
	if st, err := d.f.Stat(); err == nil && st.Mode()&os.ModeDevice != 0 {
		_, _, _ = syscall.Syscall(syscall.SYS_IOCTL, d.f.Fd(), blkRRPart, 0)
	}
}

// blkROGet is the BLKROGET ioctl: is the block device read-only.
const blkROGet = 0x125e

// ReadOnly reports whether path cannot be erased because it is read-only: a block
// device the kernel marks read-only, or a regular file without any write permission
// bit (root could still write it; the bits are the owner's statement).
func ReadOnly(path string) (bool, error) {
	st, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	if st.Mode()&os.ModeDevice == 0 {
		return st.Mode().Perm()&0o222 == 0, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var ro int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), blkROGet, uintptr(unsafe.Pointer(&ro))); errno != 0 {
		return false, fmt.Errorf("BLKROGET %s: %w", path, errno)
	}
	return ro != 0, nil
}
