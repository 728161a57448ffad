package disk

import (
	"encoding/binary"
	"fmt"
)

// isExtended reports whether an MBR partition type is an extended partition, a
// container of logical partitions (DOS CHS, DOS LBA, Linux).
func isExtended(typ byte) bool { return typ == 0x05 || typ == 0x0f || typ == 0x85 }

// maxLogical bounds the walk of an EBR chain, which a damaged disk may make circular.
const maxLogical = 256

// LogicalPartitions lists the logical partitions inside the extended partitions of an
// MBR table (ReadTable returns the primary entries only), numbered from 5 as Linux
// does. Each extended partition holds a chain of extended boot records: one sector
// with the logical partition, relative to that sector, and the link to the next
// record, relative to the extended partition. A chain that leaves its extended
// partition ends there.
func LogicalPartitions(dst Target, t *Table) ([]Partition, error) {
	if t.Label != LabelMSDOS {
		return nil, nil
	}
	var logical []Partition
	sec := make([]byte, SectorSize)
	le := binary.LittleEndian
	for _, ext := range t.Partitions {
		if !isExtended(ext.Type) {
			continue
		}
		base, end := ext.Start/SectorSize, (ext.Start+ext.Size)/SectorSize
		for ebr, n := base, 0; n < maxLogical && ebr >= base && ebr < end; n++ {
			if _, err := dst.ReadAt(sec, ebr*SectorSize); err != nil {
				return nil, fmt.Errorf("read extended boot record at sector %d: %w", ebr, err)
			}
			if sec[510] != 0x55 || sec[511] != 0xaa {
				break
			}
			e, next := sec[mbrEntryOffset:][:16], sec[mbrEntryOffset+16:][:16]
			first, count := int64(le.Uint32(e[8:])), int64(le.Uint32(e[12:]))
			if e[4] != 0 && count > 0 && ebr+first+count <= end {
				logical = append(logical, Partition{Number: 5 + len(logical), Start: (ebr + first) * SectorSize,
					Size: count * SectorSize, Type: e[4], Bootable: e[0]&mbrBootable != 0})
			}
			if !isExtended(next[4]) || le.Uint32(next[8:]) == 0 {
				break
			}
			ebr = base + int64(le.Uint32(next[8:]))
		}
	}
	return logical, nil
}
