package erase

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"unsafe"
)

// disk is an open device: writes and reads of whole aligned blocks go through a
// descriptor opened with O_DIRECT when the filesystem supports it (tmpfs does not),
// the rest through a buffered one.
type disk struct {
	path   string
	f      *os.File
	direct *os.File
	size   int64
}

func openDisk(path string) (*disk, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("size of %s: %w", path, err)
	}
	d := &disk{path: path, f: f, size: size}
	if direct, err := os.OpenFile(path, os.O_RDWR|syscall.O_DIRECT, 0); err == nil {
		d.direct = direct
	}
	return d, nil
}

func (d *disk) close() {
	if d.direct != nil {
		d.direct.Close()
	}
	d.f.Close()
}

func (d *disk) pick(b []byte, off int64) *os.File {
	if d.direct != nil && off%align == 0 && len(b)%align == 0 && uintptrOf(b)%align == 0 {
		return d.direct
	}
	return d.f
}

func (d *disk) writeAt(b []byte, off int64) error {
	if _, err := d.pick(b, off).WriteAt(b, off); err != nil {
		return fmt.Errorf("write %s at %d: %w", d.path, off, err)
	}
	return nil
}

func (d *disk) readAt(b []byte, off int64) error {
	if _, err := d.pick(b, off).ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read %s at %d: %w", d.path, off, err)
	}
	return nil
}

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

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
