package floppy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf16"
)

// ErrNotExist is returned for a path the image does not hold.
var ErrNotExist = errors.New("no such file in the FAT image")

// FS reads a FAT12 or FAT16 filesystem (a floppy image file or a block
// device) without mounting it.
type FS struct {
	r               io.ReaderAt
	sectorSize      int
	clusterSize     int
	firstRoot       int64
	rootEntries     int
	firstData       int64
	clusters        int
	fat16           bool
	fat             []byte
	bootLabel       string
	rootLabel       string
	rootLabelExists bool
}

// Entry is one file or directory of a directory listing.
type Entry struct {
	Name string
	Dir  bool
	Size int64
}

// Open reads the boot sector and the first FAT of the filesystem in r.
func Open(r io.ReaderAt) (*FS, error) {
	bs := make([]byte, 512)
	if _, err := r.ReadAt(bs, 0); err != nil {
		return nil, fmt.Errorf("read boot sector: %w", err)
	}
	if bs[510] != 0x55 || bs[511] != 0xaa {
		return nil, errors.New("not a FAT filesystem: no boot sector signature")
	}
	bps := int(binary.LittleEndian.Uint16(bs[11:]))
	spc := int(bs[13])
	reserved := int(binary.LittleEndian.Uint16(bs[14:]))
	fats := int(bs[16])
	rootEntries := int(binary.LittleEndian.Uint16(bs[17:]))
	total := int64(binary.LittleEndian.Uint16(bs[19:]))
	if total == 0 {
		total = int64(binary.LittleEndian.Uint32(bs[32:]))
	}
	spf := int(binary.LittleEndian.Uint16(bs[22:]))
	switch {
	case bps < 512 || bps > 4096 || bps&(bps-1) != 0:
		return nil, fmt.Errorf("not a FAT filesystem: %d bytes per sector", bps)
	case spc == 0 || spc&(spc-1) != 0:
		return nil, fmt.Errorf("not a FAT filesystem: %d sectors per cluster", spc)
	case reserved == 0 || fats == 0:
		return nil, errors.New("not a FAT filesystem: no reserved sectors or no FAT")
	case spf == 0:
		return nil, errors.New("FAT32 is not supported")
	}
	rootSectors := (rootEntries*dirEntrySize + bps - 1) / bps
	firstData := int64(reserved + fats*spf + rootSectors)
	if total <= firstData {
		return nil, errors.New("not a FAT filesystem: no room for data")
	}
	f := &FS{r: r, sectorSize: bps, clusterSize: spc * bps, rootEntries: rootEntries,
		firstRoot: int64(reserved+fats*spf) * int64(bps), firstData: firstData * int64(bps),
		clusters: int((total - firstData) / int64(spc))}
	if f.clusters >= 65525 {
		return nil, errors.New("FAT32 is not supported")
	}
	f.fat16 = f.clusters >= 4085
	need := (f.clusters + 2) * 3 / 2
	if f.fat16 {
		need = (f.clusters + 2) * 2
	}
	if need > spf*bps {
		return nil, errors.New("not a FAT filesystem: the FAT is too small for the clusters")
	}
	f.fat = make([]byte, need+1)
	if _, err := r.ReadAt(f.fat[:need], int64(reserved*bps)); err != nil {
		return nil, fmt.Errorf("read FAT: %w", err)
	}
	if bs[38] == 0x29 {
		f.bootLabel = strings.TrimRight(string(bs[43:54]), " ")
	}
	return f, nil
}

// OpenFile opens an image file or block device; the caller closes the file.
func OpenFile(path string) (*FS, *os.File, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	fs, err := Open(file)
	if err != nil {
		file.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return fs, file, nil
}

// Label is the volume label: the root directory's label entry, which tools
// keep current, else the boot sector's; "" when there is none.
func (f *FS) Label() (string, error) {
	if _, err := f.ReadDir(""); err != nil {
		return "", err
	}
	l := f.bootLabel
	if f.rootLabelExists {
		l = f.rootLabel
	}
	if l == "NO NAME" {
		l = ""
	}
	return l, nil
}

func (f *FS) next(c int) int {
	if f.fat16 {
		return int(binary.LittleEndian.Uint16(f.fat[c*2:]))
	}
	v := int(binary.LittleEndian.Uint16(f.fat[c*3/2:]))
	if c%2 == 1 {
		return v >> 4
	}
	return v & 0xfff
}

// chain reads the clusters of a file or directory, at most limit bytes.
func (f *FS) chain(first int, limit int64) ([]byte, error) {
	var out []byte
	end := 0xff8
	if f.fat16 {
		end = 0xfff8
	}
	c := first
	for steps := 0; int64(len(out)) < limit; steps++ {
		if c < 2 || c >= f.clusters+2 || steps > f.clusters {
			return nil, fmt.Errorf("broken cluster chain at %d", c)
		}
		buf := make([]byte, f.clusterSize)
		if _, err := f.r.ReadAt(buf, f.firstData+int64(c-2)*int64(f.clusterSize)); err != nil {
			return nil, fmt.Errorf("read cluster %d: %w", c, err)
		}
		out = append(out, buf...)
		if c = f.next(c); c >= end {
			break
		}
	}
	if int64(len(out)) > limit {
		out = out[:limit]
	}
	return out, nil
}

type rawEntry struct {
	Entry
	cluster int
}

func (f *FS) dir(cluster int) ([]rawEntry, error) {
	var data []byte
	if cluster == 0 {
		data = make([]byte, f.rootEntries*dirEntrySize)
		if _, err := f.r.ReadAt(data, f.firstRoot); err != nil {
			return nil, fmt.Errorf("read root directory: %w", err)
		}
	} else {
		var err error
		if data, err = f.chain(cluster, int64(f.clusters)*int64(f.clusterSize)); err != nil {
			return nil, err
		}
	}
	var (
		out     []rawEntry
		lfn     []uint16
		lfnSum  byte
		lfnNext int
	)
	for off := 0; off+dirEntrySize <= len(data); off += dirEntrySize {
		e := data[off : off+dirEntrySize]
		attr := e[11]
		switch {
		case e[0] == 0:
			return out, nil
		case e[0] == 0xe5:
			lfn = nil
			continue
		case attr == attrLFN:
			seq := int(e[0] & 0x1f)
			if e[0]&0x40 != 0 {
				lfn, lfnSum, lfnNext = make([]uint16, seq*13), e[13], seq
			}
			if lfn == nil || seq != lfnNext || seq == 0 || e[13] != lfnSum {
				lfn = nil
				continue
			}
			for j, o := range []int{1, 3, 5, 7, 9, 14, 16, 18, 20, 22, 24, 28, 30} {
				lfn[(seq-1)*13+j] = binary.LittleEndian.Uint16(e[o:])
			}
			lfnNext--
			continue
		case attr&attrVolumeID != 0:
			if cluster == 0 {
				f.rootLabel, f.rootLabelExists = strings.TrimRight(string(e[:11]), " "), true
			}
			lfn = nil
			continue
		}
		var short [11]byte
		copy(short[:], e[:11])
		name := ""
		if lfn != nil && lfnNext == 0 && lfnChecksum(short) == lfnSum {
			for i, u := range lfn {
				if u == 0 {
					lfn = lfn[:i]
					break
				}
			}
			name = string(utf16.Decode(lfn))
		} else {
			name = shortString(short, e[12])
		}
		lfn = nil
		if name == "." || name == ".." {
			continue
		}
		out = append(out, rawEntry{Entry: Entry{Name: name, Dir: attr&attrDir != 0,
			Size: int64(binary.LittleEndian.Uint32(e[28:]))},
			cluster: int(binary.LittleEndian.Uint16(e[26:]))})
	}
	return out, nil
}

// shortString renders an 8.3 name, lower-casing the parts Windows NT marks as
// lower case (flags 0x08 name, 0x10 extension).
func shortString(s [11]byte, flags byte) string {
	if s[0] == 0x05 {
		s[0] = 0xe5
	}
	base, ext := strings.TrimRight(string(s[:8]), " "), strings.TrimRight(string(s[8:]), " ")
	if flags&0x08 != 0 {
		base = strings.ToLower(base)
	}
	if flags&0x10 != 0 {
		ext = strings.ToLower(ext)
	}
	if ext == "" {
		return base
	}
	return base + "." + ext
}

// lookup walks a slash-separated path, matching names without regard to case
// as FAT does; "" is the root directory.
func (f *FS) lookup(path string) (rawEntry, error) {
	cur := rawEntry{Entry: Entry{Dir: true}}
	for _, p := range strings.Split(strings.Trim(path, "/"), "/") {
		if p == "" {
			continue
		}
		if !cur.Dir {
			return rawEntry{}, fmt.Errorf("%s: %w", path, ErrNotExist)
		}
		entries, err := f.dir(cur.cluster)
		if err != nil {
			return rawEntry{}, err
		}
		found := false
		for _, e := range entries {
			if strings.EqualFold(e.Name, p) {
				cur, found = e, true
				break
			}
		}
		if !found {
			return rawEntry{}, fmt.Errorf("%s: %w", path, ErrNotExist)
		}
	}
	return cur, nil
}

// ReadDir lists a directory ("" or "/" for the root).
func (f *FS) ReadDir(path string) ([]Entry, error) {
	d, err := f.lookup(path)
	if err != nil {
		return nil, err
	}
	if !d.Dir {
		return nil, fmt.Errorf("%s: not a directory", path)
	}
	raw, err := f.dir(d.cluster)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, len(raw))
	for i, e := range raw {
		out[i] = e.Entry
	}
	return out, nil
}

// ReadFile returns a file's contents.
func (f *FS) ReadFile(path string) ([]byte, error) {
	e, err := f.lookup(path)
	if err != nil {
		return nil, err
	}
	if e.Dir {
		return nil, fmt.Errorf("%s: is a directory", path)
	}
	if e.Size == 0 {
		return []byte{}, nil
	}
	if e.Size > int64(f.clusters)*int64(f.clusterSize) {
		return nil, fmt.Errorf("%s: size %d exceeds the filesystem", path, e.Size)
	}
	data, err := f.chain(e.cluster, e.Size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(data)) < e.Size {
		return nil, fmt.Errorf("%s: cluster chain shorter than the file", path)
	}
	return data, nil
}
