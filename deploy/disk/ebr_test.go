package disk

import (
	"encoding/binary"
	"testing"
)

// FuzzLogicalPartitions walks hostile EBR chains, circular ones included: errors
// are fine; panics, endless walks and logical partitions outside their extended
// partition are not.
func FuzzLogicalPartitions(f *testing.F) {
	le := binary.LittleEndian
	// An MBR with an extended partition over sectors 8-63 holding EBRs at sectors 8
	// and 24 (24 = 8 + 16: links count from the extended partition's start).
	d := make(memDisk, 64*SectorSize)
	if err := writeMBR(d, &Table{Label: LabelMSDOS, DiskID: newDiskSig(), Partitions: []Partition{
		{Number: 1, Start: 8 * SectorSize, Size: 56 * SectorSize, Type: 0x05},
	}}); err != nil {
		f.Fatal(err)
	}
	ebr := func(at, next uint32) {
		s := d[at*SectorSize:][:SectorSize]
		s[510], s[511] = 0x55, 0xaa
		e := s[mbrEntryOffset:]
		e[4] = mbrTypeLinux
		le.PutUint32(e[8:], 2)  // the logical partition starts 2 sectors after its EBR
		le.PutUint32(e[12:], 8) // and has 8 sectors
		if next != 0 {
			e[16+4] = 0x05
			le.PutUint32(e[16+8:], next)
		}
	}
	ebr(8, 16)
	ebr(24, 0)
	f.Add([]byte(d))
	ebr(24, 16) // a chain that loops on its last record
	f.Add([]byte(d))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := memDisk(data)
		tbl, err := ReadTable(d)
		if err != nil {
			return
		}
		logical, err := LogicalPartitions(d, tbl)
		if err != nil {
			return
		}
		if len(logical) > maxLogical*len(tbl.Partitions) {
			t.Fatalf("%d logical partitions from %d extended ones", len(logical), len(tbl.Partitions))
		}
		for _, p := range logical {
			inside := false
			for _, ext := range tbl.Partitions {
				if isExtended(ext.Type) && p.Start >= ext.Start && p.Start+p.Size <= ext.Start+ext.Size {
					inside = true
				}
			}
			if !inside || p.Size <= 0 {
				t.Fatalf("logical partition %+v outside every extended partition of %+v", p, tbl.Partitions)
			}
		}
	})
}
