package bootiso

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ErrNotExist is returned for a path the ISO does not hold.
var ErrNotExist = errors.New("no such file in the ISO")

const (
	isoSector = 2048
	// maxDirSize bounds how much a directory record may make us read, so a
	// corrupt ISO cannot ask for gigabytes.
	maxDirSize = 16 << 20
	// maxDepth bounds the directory tree walk (ISO 9660 itself allows 8 levels;
	// Rock Ridge relocates deeper ones).
	maxDepth = 32
)

// ISO reads files from an ISO 9660 image through its primary volume
// descriptor, using Rock Ridge names when present; lookups ignore case, so
// the plain ISO names (GRUB.CFG;1) are found as well.
type ISO struct {
	r         io.ReaderAt
	blockSize int64
	root      record
}

type record struct {
	name   string
	extent int64
	size   int64
	dir    bool
}

// OpenISO reads the primary volume descriptor of the ISO in r.
func OpenISO(r io.ReaderAt) (*ISO, error) {
	vd := make([]byte, isoSector)
	for s := int64(16); s < 16+64; s++ {
		if _, err := r.ReadAt(vd, s*isoSector); err != nil {
			return nil, fmt.Errorf("read volume descriptor: %w", err)
		}
		if string(vd[1:6]) != "CD001" {
			return nil, errors.New("not an ISO 9660 image")
		}
		switch vd[0] {
		case 1:
			bs := int64(binary.LittleEndian.Uint16(vd[128:]))
			if bs < 512 || bs > isoSector || bs&(bs-1) != 0 {
				return nil, fmt.Errorf("bad ISO logical block size %d", bs)
			}
			iso := &ISO{r: r, blockSize: bs}
			root, ok := parseRecord(vd[156:190])
			if !ok || !root.dir {
				return nil, errors.New("bad ISO root directory record")
			}
			iso.root = root
			return iso, nil
		case 255:
			return nil, errors.New("ISO has no primary volume descriptor")
		}
	}
	return nil, errors.New("ISO has no primary volume descriptor")
}

func parseRecord(b []byte) (record, bool) {
	if len(b) < 34 || int(b[0]) > len(b) || b[0] < 34 {
		return record{}, false
	}
	n := int(b[32])
	if 33+n > int(b[0]) {
		return record{}, false
	}
	rec := record{
		extent: int64(binary.LittleEndian.Uint32(b[2:])),
		size:   int64(binary.LittleEndian.Uint32(b[10:])),
		dir:    b[25]&0x02 != 0,
		name:   string(b[33 : 33+n]),
	}
	switch rec.name {
	case "\x00":
		rec.name = "."
	case "\x01":
		rec.name = ".."
	default:
		rec.name, _, _ = strings.Cut(rec.name, ";")
		rec.name = strings.TrimSuffix(rec.name, ".")
	}
	su := 33 + n
	if n%2 == 0 {
		su++
	}
	if nm := rockRidgeName(b[min(su, int(b[0])):b[0]]); nm != "" {
		rec.name = nm
	}
	return rec, true
}

// rockRidgeName joins the NM entries of a System Use area; "" when it has none.
func rockRidgeName(su []byte) string {
	var name strings.Builder
	for len(su) >= 4 {
		l := int(su[2])
		if l < 4 || l > len(su) {
			break
		}
		if string(su[:2]) == "NM" && l >= 5 && su[4]&0x06 == 0 {
			name.Write(su[5:l])
		}
		su = su[l:]
	}
	return name.String()
}

func (iso *ISO) readDir(d record) ([]record, error) {
	if d.size > maxDirSize {
		return nil, fmt.Errorf("directory %q of %d bytes is too large", d.name, d.size)
	}
	data, err := iso.read(d)
	if err != nil {
		return nil, fmt.Errorf("read directory %q: %w", d.name, err)
	}
	var out []record
	for off := 0; off < len(data); {
		l := int(data[off])
		if l == 0 {
			// Records never cross a sector; the rest of this one is padding.
			off = (off/isoSector + 1) * isoSector
			continue
		}
		rec, ok := parseRecord(data[off:min(off+l, len(data))])
		if !ok {
			return nil, fmt.Errorf("bad record in directory %q", d.name)
		}
		if rec.name != "." && rec.name != ".." {
			out = append(out, rec)
		}
		off += l
	}
	return out, nil
}

func (iso *ISO) lookup(p string) (record, error) {
	cur := iso.root
	for _, part := range strings.Split(strings.Trim(p, "/"), "/") {
		if part == "" {
			continue
		}
		if !cur.dir {
			return record{}, fmt.Errorf("%s: %w", p, ErrNotExist)
		}
		entries, err := iso.readDir(cur)
		if err != nil {
			return record{}, err
		}
		found := false
		for _, e := range entries {
			if strings.EqualFold(e.name, part) {
				cur, found = e, true
				break
			}
		}
		if !found {
			return record{}, fmt.Errorf("%s: %w", p, ErrNotExist)
		}
	}
	return cur, nil
}

// ReadFile returns the contents of the file at the slash-separated path p.
func (iso *ISO) ReadFile(p string) ([]byte, error) {
	rec, err := iso.lookup(p)
	if err != nil {
		return nil, err
	}
	if rec.dir {
		return nil, fmt.Errorf("%s: is a directory", p)
	}
	data, err := iso.read(rec)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	return data, nil
}

// read returns a record's extent. It grows the buffer as data arrives rather
// than trusting the recorded size, so a corrupt size cannot make it allocate
// more than the image holds.
func (iso *ISO) read(rec record) ([]byte, error) {
	data, err := io.ReadAll(io.NewSectionReader(iso.r, rec.extent*iso.blockSize, rec.size))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) != rec.size {
		return nil, fmt.Errorf("extent ends %d bytes past the image", rec.size-int64(len(data)))
	}
	return data, nil
}

// Walk calls fn for every file and directory, parents before children, with
// paths relative to the root ("boot/grub/grub.cfg").
// A directory whose extent was already walked is skipped, so a corrupt ISO
// whose directories point at each other cannot make the walk endless.
func (iso *ISO) Walk(fn func(path string, dir bool) error) error {
	return iso.walk(iso.root, "", 0, map[int64]bool{}, fn)
}

func (iso *ISO) walk(d record, prefix string, depth int, seen map[int64]bool, fn func(string, bool) error) error {
	if depth > maxDepth {
		return fmt.Errorf("directory tree deeper than %d at %q", maxDepth, prefix)
	}
	if seen[d.extent] {
		return nil
	}
	seen[d.extent] = true
	entries, err := iso.readDir(d)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := prefix + e.name
		if err := fn(p, e.dir); err != nil {
			return err
		}
		if e.dir {
			if err := iso.walk(e, p+"/", depth+1, seen, fn); err != nil {
				return err
			}
		}
	}
	return nil
}
