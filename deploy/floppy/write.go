// Package floppy builds and reads small FAT12 filesystem images without root,
// loop mounts or mkfs: the virtual-media parameter floppy (label ir-vfd-dev with
// parameters.txt, see docs/vmedia.md) and the FAT images a UEFI boot ISO carries.
package floppy

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
)

const (
	// FloppySize is a 1.44 MB diskette: 2880 sectors of 512 bytes.
	FloppySize = 2880 * sectorSize
	// MaxSize is the largest image Build makes: FAT12 with 16-sector clusters
	// stays under its 4084-cluster limit up to here.
	MaxSize = 32 << 20

	sectorSize   = 512
	dirEntrySize = 32
	maxClusters  = 4084
	// Every date and time in the image is the FAT epoch (1980-01-01 00:00),
	// so the same files give the same bytes.
	fatEpochDate = 1<<5 | 1

	attrVolumeID = 0x08
	attrDir      = 0x10
	attrArchive  = 0x20
	attrLFN      = 0x0f
)

// File is one file of an image; Name is a slash-separated path, directories
// are created as needed.
type File struct {
	Name string
	Data []byte
}

// Image describes a FAT12 filesystem.
type Image struct {
	// Label is the volume label, at most 11 bytes of printable ASCII; it is kept
	// as given (lower case included, as mkfs.fat does).
	Label string
	// Size in bytes, a multiple of 512; zero means FloppySize.
	Size int64
	// Files in the order they are laid out.
	Files []File
}

// geometry is the BIOS parameter block of an image.
type geometry struct {
	totalSectors     int
	sectorsPerClust  int
	reservedSectors  int
	fats             int
	rootEntries      int
	sectorsPerFAT    int
	media            byte
	sectorsPerTrack  int
	heads            int
	clusters         int
	firstDataSector  int
	firstRootSector  int
	clusterSizeBytes int
}

func newGeometry(size int64) (geometry, error) {
	if size == 0 {
		size = FloppySize
	}
	if size%sectorSize != 0 || size < 64*sectorSize || size > MaxSize {
		return geometry{}, fmt.Errorf("image size %d: want a multiple of %d between %d and %d bytes", size, sectorSize, 64*sectorSize, MaxSize)
	}
	g := geometry{totalSectors: int(size / sectorSize), reservedSectors: 1, fats: 2}
	if size == FloppySize {
		// The standard 3.5" HD diskette parameters, which BIOSes and iLO expect.
		g.sectorsPerClust, g.rootEntries, g.sectorsPerFAT, g.media, g.sectorsPerTrack, g.heads = 1, 224, 9, 0xf0, 18, 2
	} else {
		g.rootEntries, g.media, g.sectorsPerTrack, g.heads = 512, 0xf8, 32, 64
		rootSectors := g.rootEntries * dirEntrySize / sectorSize
		for g.sectorsPerClust = 1; (g.totalSectors-g.reservedSectors-rootSectors)/g.sectorsPerClust > maxClusters; g.sectorsPerClust *= 2 {
		}
		// The FAT size depends on the cluster count, which depends on the FAT
		// size: grow it until it holds every cluster.
		for g.sectorsPerFAT = 1; ; g.sectorsPerFAT++ {
			data := g.totalSectors - g.reservedSectors - g.fats*g.sectorsPerFAT - rootSectors
			if need := ((data/g.sectorsPerClust+2)*3/2 + sectorSize - 1) / sectorSize; need <= g.sectorsPerFAT {
				break
			}
		}
	}
	g.firstRootSector = g.reservedSectors + g.fats*g.sectorsPerFAT
	g.firstDataSector = g.firstRootSector + g.rootEntries*dirEntrySize/sectorSize
	g.clusters = (g.totalSectors - g.firstDataSector) / g.sectorsPerClust
	g.clusterSizeBytes = g.sectorsPerClust * sectorSize
	return g, nil
}

// node is a file or directory being laid out.
type node struct {
	name  string
	short [11]byte
	// long is set when the name needs VFAT long-name entries.
	long     bool
	dir      bool
	data     []byte
	children []*node
	cluster  int
}

// Build returns the image bytes. The same Image always gives the same bytes.
func (im Image) Build() ([]byte, error) {
	g, err := newGeometry(im.Size)
	if err != nil {
		return nil, err
	}
	label, err := labelField(im.Label)
	if err != nil {
		return nil, err
	}
	root := &node{dir: true}
	for _, f := range im.Files {
		if err := root.add(f); err != nil {
			return nil, err
		}
	}
	b := &builder{g: g, img: make([]byte, g.totalSectors*sectorSize), next: 2}
	if err := b.layoutChildren(root); err != nil {
		return nil, err
	}
	rootEntries := b.entries(root, 0)
	if im.Label != "" {
		rootEntries = append(shortEntry(label, attrVolumeID, 0, 0), rootEntries...)
	}
	if len(rootEntries) > g.rootEntries*dirEntrySize {
		return nil, fmt.Errorf("root directory: %d entries do not fit in %d", len(rootEntries)/dirEntrySize, g.rootEntries)
	}
	copy(b.img[g.firstRootSector*sectorSize:], rootEntries)
	b.bootSector(label, volumeID(im))
	b.writeFATs()
	return b.img, nil
}

func (n *node) add(f File) error {
	parts := strings.Split(f.Name, "/")
	cur := n
	for i, p := range parts {
		if err := checkName(p); err != nil {
			return fmt.Errorf("file %q: %w", f.Name, err)
		}
		var found *node
		for _, c := range cur.children {
			if strings.EqualFold(c.name, p) {
				found = c
			}
		}
		last := i == len(parts)-1
		switch {
		case found != nil && (last || !found.dir):
			return fmt.Errorf("file %q: %q already exists", f.Name, p)
		case found != nil:
			cur = found
		default:
			c := &node{name: p, dir: !last}
			if last {
				c.data = f.Data
			}
			c.short, c.long = shortName(p, cur.children)
			for _, sib := range cur.children {
				if sib.short == c.short {
					return fmt.Errorf("file %q: %q is also the short name of %q", f.Name, p, sib.name)
				}
			}
			cur.children = append(cur.children, c)
			cur = c
		}
	}
	return nil
}

func checkName(p string) error {
	switch {
	case p == "" || p == "." || p == "..":
		return fmt.Errorf("bad path component %q", p)
	case len(utf16.Encode([]rune(p))) > 255:
		return errors.New("name longer than 255 characters")
	case strings.HasSuffix(p, ".") || strings.HasSuffix(p, " "):
		return fmt.Errorf("name %q ends in a dot or space", p)
	case strings.ContainsAny(p, "\"*:<>?\\|") || strings.IndexFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return fmt.Errorf("name %q holds a character FAT forbids", p)
	}
	return nil
}

func labelField(label string) ([11]byte, error) {
	var f [11]byte
	copy(f[:], "NO NAME    ")
	if label == "" {
		return f, nil
	}
	if len(label) > 11 || strings.IndexFunc(label, func(r rune) bool {
		return r < 0x20 || r > 0x7e || strings.ContainsRune("\"*+,./:;<=>?[\\]|", r)
	}) >= 0 {
		return f, fmt.Errorf("volume label %q: want at most 11 printable ASCII characters, none of \"*+,./:;<=>?[\\]|", label)
	}
	copy(f[:], label+strings.Repeat(" ", 11-len(label)))
	return f, nil
}

// volumeID is a serial number derived from the content, so that it is stable
// for the same input yet differs between images.
func volumeID(im Image) uint32 {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00", im.Label, im.Size)
	for _, f := range im.Files {
		fmt.Fprintf(h, "%s\x00%d\x00", f.Name, len(f.Data))
		h.Write(f.Data)
	}
	return binary.LittleEndian.Uint32(h.Sum(nil))
}

const shortChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'()-@^_`{}~"

// shortName gives the 8.3 entry name: the name itself when it is a valid upper
// case 8.3 name, else a NAME~N.EXT alias that is unique among siblings (the
// long name then travels in VFAT entries, and long is true).
func shortName(name string, siblings []*node) (short [11]byte, long bool) {
	base, ext := name, ""
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		base, ext = name[:i], name[i+1:]
	}
	var s [11]byte
	if is83(base, ext) {
		copy(s[:], fmt.Sprintf("%-8s%-3s", base, ext))
		return s, false
	}
	clean := func(v string, n int) string {
		var out []byte
		for _, r := range strings.ToUpper(v) {
			switch {
			case len(out) == n:
				return string(out)
			case r == ' ' || r == '.':
			case r < 0x80 && strings.ContainsRune(shortChars, r):
				out = append(out, byte(r))
			default:
				out = append(out, '_')
			}
		}
		return string(out)
	}
	b, e := clean(base, 8), clean(ext, 3)
	for n := 1; ; n++ {
		tail := fmt.Sprintf("~%d", n)
		stem := b
		if len(stem)+len(tail) > 8 {
			stem = stem[:8-len(tail)]
		}
		copy(s[:], fmt.Sprintf("%-8s%-3s", stem+tail, e))
		taken := false
		for _, c := range siblings {
			taken = taken || c.short == s
		}
		if !taken {
			return s, true
		}
	}
}

func is83(base, ext string) bool {
	valid := func(v string, max int) bool {
		if len(v) > max {
			return false
		}
		for _, r := range v {
			if !strings.ContainsRune(shortChars, r) {
				return false
			}
		}
		return true
	}
	return base != "" && valid(base, 8) && valid(ext, 3)
}

type builder struct {
	g    geometry
	img  []byte
	fat  []int
	next int
}

func (b *builder) alloc(size int) (int, error) {
	n := (size + b.g.clusterSizeBytes - 1) / b.g.clusterSizeBytes
	if n == 0 {
		return 0, nil
	}
	if b.next+n > b.g.clusters+2 {
		return 0, fmt.Errorf("files do not fit in a %d-byte image", b.g.totalSectors*sectorSize)
	}
	first := b.next
	for c := first; c < first+n; c++ {
		next := c + 1
		if c == first+n-1 {
			next = 0xfff
		}
		b.fat = append(b.fat, c, next)
	}
	b.next += n
	return first, nil
}

func (b *builder) clusterOffset(c int) int {
	return (b.g.firstDataSector + (c-2)*b.g.sectorsPerClust) * sectorSize
}

// layoutChildren places every file and subdirectory below dir: a
// subdirectory's clusters first, then its contents, depth first.
func (b *builder) layoutChildren(dir *node) error {
	for _, c := range dir.children {
		size := len(c.data)
		if c.dir {
			size = len(b.entries(c, 0))
		}
		first, err := b.alloc(size)
		if err != nil {
			return err
		}
		c.cluster = first
		if c.dir {
			if err := b.layoutChildren(c); err != nil {
				return err
			}
			copy(b.img[b.clusterOffset(first):], b.entries(c, dir.cluster))
		} else {
			copy(b.img[b.clusterOffset(first):], c.data)
		}
	}
	return nil
}

// entries encodes a directory's entries; parent is the ".." cluster (0 for
// the root) and only matters for subdirectories.
func (b *builder) entries(dir *node, parent int) []byte {
	var out []byte
	if dir.name != "" {
		out = append(out, shortEntry([11]byte([]byte(".          ")), attrDir, dir.cluster, 0)...)
		out = append(out, shortEntry([11]byte([]byte("..         ")), attrDir, parent, 0)...)
	}
	for _, c := range dir.children {
		if c.long {
			out = append(out, lfnEntries(c.name, c.short)...)
		}
		attr, size := byte(attrArchive), len(c.data)
		if c.dir {
			attr, size = attrDir, 0
		}
		out = append(out, shortEntry(c.short, attr, c.cluster, size)...)
	}
	return out
}

func shortEntry(name [11]byte, attr byte, cluster, size int) []byte {
	e := make([]byte, dirEntrySize)
	copy(e, name[:])
	e[11] = attr
	if attr != attrVolumeID {
		binary.LittleEndian.PutUint16(e[16:], fatEpochDate) // created
		binary.LittleEndian.PutUint16(e[18:], fatEpochDate) // accessed
	}
	binary.LittleEndian.PutUint16(e[24:], fatEpochDate) // modified
	binary.LittleEndian.PutUint16(e[26:], uint16(cluster))
	binary.LittleEndian.PutUint32(e[28:], uint32(size))
	return e
}

func lfnChecksum(short [11]byte) byte {
	var sum byte
	for _, c := range short {
		sum = (sum&1)<<7 + sum>>1 + c
	}
	return sum
}

// lfnEntries encodes a long name as VFAT entries, last part first as the
// format requires.
func lfnEntries(name string, short [11]byte) []byte {
	u := utf16.Encode([]rune(name))
	if len(u)%13 != 0 {
		u = append(u, 0)
		for len(u)%13 != 0 {
			u = append(u, 0xffff)
		}
	}
	n := len(u) / 13
	sum := lfnChecksum(short)
	var out []byte
	for i := n; i >= 1; i-- {
		e := make([]byte, dirEntrySize)
		e[0] = byte(i)
		if i == n {
			e[0] |= 0x40
		}
		e[11], e[13] = attrLFN, sum
		part := u[(i-1)*13 : i*13]
		offsets := []int{1, 3, 5, 7, 9, 14, 16, 18, 20, 22, 24, 28, 30}
		for j, off := range offsets {
			binary.LittleEndian.PutUint16(e[off:], part[j])
		}
		out = append(out, e...)
	}
	return out
}

func (b *builder) bootSector(label [11]byte, id uint32) {
	s := b.img[:sectorSize]
	copy(s, []byte{0xeb, 0x3c, 0x90})
	copy(s[3:], "FERRIC  ")
	binary.LittleEndian.PutUint16(s[11:], sectorSize)
	s[13] = byte(b.g.sectorsPerClust)
	binary.LittleEndian.PutUint16(s[14:], uint16(b.g.reservedSectors))
	s[16] = byte(b.g.fats)
	binary.LittleEndian.PutUint16(s[17:], uint16(b.g.rootEntries))
	if b.g.totalSectors < 1<<16 {
		binary.LittleEndian.PutUint16(s[19:], uint16(b.g.totalSectors))
	} else {
		binary.LittleEndian.PutUint32(s[32:], uint32(b.g.totalSectors))
	}
	s[21] = b.g.media
	binary.LittleEndian.PutUint16(s[22:], uint16(b.g.sectorsPerFAT))
	binary.LittleEndian.PutUint16(s[24:], uint16(b.g.sectorsPerTrack))
	binary.LittleEndian.PutUint16(s[26:], uint16(b.g.heads))
	s[38] = 0x29
	binary.LittleEndian.PutUint32(s[39:], id)
	copy(s[43:], label[:])
	copy(s[54:], "FAT12   ")
	// Not bootable: the code at the jump target halts in a loop.
	copy(s[62:], []byte{0xf4, 0xeb, 0xfd})
	s[510], s[511] = 0x55, 0xaa
}

func (b *builder) writeFATs() {
	fat := make([]byte, b.g.sectorsPerFAT*sectorSize)
	put := func(n, v int) {
		off := n * 3 / 2
		if n%2 == 0 {
			fat[off] = byte(v)
			fat[off+1] = fat[off+1]&0xf0 | byte(v>>8)&0x0f
		} else {
			fat[off] = fat[off]&0x0f | byte(v<<4)
			fat[off+1] = byte(v >> 4)
		}
	}
	put(0, 0xf00|int(b.g.media))
	put(1, 0xfff)
	for i := 0; i < len(b.fat); i += 2 {
		put(b.fat[i], b.fat[i+1])
	}
	for i := range b.g.fats {
		copy(b.img[(b.g.reservedSectors+i*b.g.sectorsPerFAT)*sectorSize:], fat)
	}
}
