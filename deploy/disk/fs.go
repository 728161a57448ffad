package disk

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
)

// swapPageSize is the page size of the nodes we deploy (x86_64, aarch64
// with 4 KiB pages); the kernel refuses a swap header for another size.
const swapPageSize = 4096

// swapHeader builds the first page of a Linux swap area (version 1, as
// mkswap writes it) for an area of size bytes.
func swapHeader(size int64, label string, uuid [16]byte) ([]byte, error) {
	pages := size / swapPageSize
	if pages < 10 {
		return nil, fmt.Errorf("swap partition of %d bytes is too small", size)
	}
	if len(label) > 16 {
		return nil, fmt.Errorf("swap label %q longer than 16 bytes", label)
	}
	p := make([]byte, swapPageSize)
	le := binary.LittleEndian
	le.PutUint32(p[1024:], 1)                             // version
	le.PutUint32(p[1028:], uint32(min(pages-1, 1<<32-1))) // last_page
	le.PutUint32(p[1032:], 0)                             // nr_badpages
	copy(p[1036:1052], uuid[:])
	copy(p[1052:1068], label)
	copy(p[swapPageSize-10:], "SWAPSPACE2")
	return p, nil
}

// fsUUID returns the UUID of the filesystem starting at off on dst, as blkid
// shows it, for ext2/3/4, XFS and Btrfs; "" when none of them is there.
func fsUUID(dst Target, off int64) (string, error) {
	buf := make([]byte, 4096)
	if _, err := dst.ReadAt(buf, off); err != nil {
		return "", fmt.Errorf("read superblock at %d: %w", off, err)
	}
	if binary.LittleEndian.Uint16(buf[1024+56:]) == 0xef53 {
		var g [16]byte
		copy(g[:], buf[1024+104:])
		return formatGUID(g), nil
	}
	if string(buf[:4]) == "XFSB" {
		var g [16]byte
		copy(g[:], buf[32:])
		return formatGUID(g), nil
	}
	bt := make([]byte, 4096)
	if _, err := dst.ReadAt(bt, off+65536); err == nil && string(bt[64:72]) == "_BHRfS_M" {
		var g [16]byte
		copy(g[:], bt[32:])
		return formatGUID(g), nil
	}
	return "", nil
}

// fsLabel returns the volume label of an ISO 9660 or FAT filesystem at off
// (config drives are one or the other); "" when there is none.
func fsLabel(dst Target, off, size int64) string {
	if size >= 32768+2048 {
		pvd := make([]byte, 72)
		if _, err := dst.ReadAt(pvd, off+32768); err == nil && pvd[0] == 1 && string(pvd[1:6]) == "CD001" {
			return strings.TrimRight(string(pvd[40:72]), " ")
		}
	}
	bs := make([]byte, SectorSize)
	if _, err := dst.ReadAt(bs, off); err != nil || bs[510] != 0x55 || bs[511] != 0xaa {
		return ""
	}
	// FAT32 keeps its extended boot record further in than FAT12/16.
	switch {
	case bytes.HasPrefix(bs[0x52:], []byte("FAT")):
		return strings.TrimRight(string(bs[0x47:0x47+11]), " ")
	case bytes.HasPrefix(bs[0x36:], []byte("FAT")):
		return strings.TrimRight(string(bs[0x2b:0x2b+11]), " ")
	}
	return ""
}
