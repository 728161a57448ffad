package disk

import (
	"io"
	"testing"
)

// memDisk is a Target in memory.
type memDisk []byte

func (m memDisk) Size() int64 { return int64(len(m)) }

func (m memDisk) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off >= int64(len(m)) {
		return 0, io.EOF
	}
	n := copy(p, m[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (m memDisk) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > int64(len(m)) {
		return 0, io.ErrShortWrite
	}
	return copy(m[off:], p), nil
}

// FuzzReadTable reads hostile partition tables, as a whole-disk image may
// carry: errors are fine, panics and partitions outside the disk are not.
func FuzzReadTable(f *testing.F) {
	gpt := make(memDisk, 80<<10)
	if err := writeGPT(gpt, &Table{Label: LabelGPT, DiskID: newGUID(), Partitions: []Partition{
		{Number: 1, Start: 40 * SectorSize, Size: 8 * SectorSize, TypeGUID: TypeLinuxFS, GUID: newGUID(), Name: "root"},
		{Number: 3, Start: 60 * SectorSize, Size: 4 * SectorSize, TypeGUID: TypeLinuxSwap, GUID: newGUID(), Name: "swap"},
	}}); err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(gpt))
	mbr := make(memDisk, 8<<10)
	if err := writeMBR(mbr, &Table{Label: LabelMSDOS, DiskID: newDiskSig(), Partitions: []Partition{
		{Number: 1, Start: 2 * SectorSize, Size: 4 * SectorSize, Type: mbrTypeLinux, Bootable: true},
		{Number: 4, Start: 8 * SectorSize, Size: 4 * SectorSize, Type: mbrTypeSwap},
	}}); err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(mbr))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := memDisk(data)
		tbl, err := ReadTable(d)
		if err != nil {
			return
		}
		for _, p := range tbl.Partitions {
			if tbl.Label == LabelGPT && (p.Start < 0 || p.Size <= 0 || p.Start+p.Size > d.Size()) {
				t.Fatalf("GPT partition %+v outside a %d-byte disk", p, d.Size())
			}
		}
	})
}
