package disk

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"unicode/utf16"
)

// SectorSize is the logical sector size partition tables are written for.
const SectorSize = 512

// Partition table labels, as Ironic's disk_label names them.
const (
	LabelMSDOS = "msdos"
	LabelGPT   = "gpt"
)

// GPT partition type GUIDs used by the layouts.
const (
	TypeEFISystem  = "c12a7328-f81f-11d2-ba4b-00a0c93ec93b"
	TypeBIOSBoot   = "21686148-6449-6e6f-744e-656564454649"
	TypeLinuxFS    = "0fc63daf-8483-4772-8e79-3d69d8477de4"
	TypeLinuxSwap  = "0657fd6d-a4ab-43c4-84e5-0933c84b4f4f"
	TypePReP       = "9e1a2d38-c612-4316-aa26-8b49521e5a8b"
	gptEntrySize   = 128
	gptEntries     = 128
	gptEntrySecs   = gptEntries * gptEntrySize / SectorSize
	gptHeaderSize  = 92
	mbrMaxSectors  = 1<<32 - 1
	mbrTypeGPT     = 0xee
	mbrTypeLinux   = 0x83
	mbrTypeSwap    = 0x82
	mbrTypeESP     = 0xef
	mbrTypePReP    = 0x41
	mbrBootable    = 0x80
	mbrSigOffset   = 440
	mbrEntryOffset = 446
)

// checkSectorSize refuses targets whose logical blocks are not 512 bytes:
// the tables below count in 512-byte sectors.
func checkSectorSize(dst Target) error {
	if b, ok := dst.(interface{ BlockSize() int }); ok && b.BlockSize() != SectorSize {
		return fmt.Errorf("partition tables are written for %d-byte sectors, the disk has %d-byte blocks", SectorSize, b.BlockSize())
	}
	return nil
}

// ErrNoTable is returned by ReadTable when the disk has no partition table.
var ErrNoTable = errors.New("no partition table")

// Partition is one entry of a partition table.
type Partition struct {
	Number int   // 1-based slot in the table
	Start  int64 // bytes from the start of the disk
	Size   int64 // bytes
	// GPT only: lower-case canonical GUIDs and the entry's name.
	TypeGUID   string `json:",omitempty"`
	GUID       string `json:",omitempty"`
	Name       string `json:",omitempty"`
	Attributes uint64 `json:",omitempty"`
	// MBR only: the partition type byte and the active (boot) flag.
	Type     byte `json:",omitempty"`
	Bootable bool `json:",omitempty"`
}

// Table is a disk's partition table.
type Table struct {
	Label string // LabelGPT or LabelMSDOS
	// DiskID is the GPT disk GUID, or the MBR disk signature as 0x%08x.
	DiskID     string
	Partitions []Partition
}

// PartUUID is what Linux (blkid, root=PARTUUID=) calls the partition's
// UUID: its GPT GUID, or "<disk signature>-<number>" on an MBR disk.
func (t *Table) PartUUID(p Partition) string {
	if t.Label == LabelGPT {
		return p.GUID
	}
	return fmt.Sprintf("%s-%02x", strings.TrimPrefix(t.DiskID, "0x"), p.Number)
}

func newGUID() string { return formatGUID(newGUIDBytes()) }

// newGUIDBytes returns a random (version 4) GUID in RFC 4122 byte order.
func newGUIDBytes() [16]byte {
	var g [16]byte
	if _, err := rand.Read(g[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // the runtime guarantees it does not fail
	}
	g[6] = g[6]&0x0f | 0x40
	g[8] = g[8]&0x3f | 0x80
	return g
}

func formatGUID(g [16]byte) string {
	h := hex.EncodeToString(g[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func parseGUID(s string) ([16]byte, error) {
	var g [16]byte
	b, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
	if err != nil || len(b) != 16 || len(s) != 36 {
		return g, fmt.Errorf("invalid GUID %q", s)
	}
	copy(g[:], b)
	return g, nil
}

// GUIDs are stored with their first three fields little-endian.
func guidToDisk(g [16]byte) [16]byte {
	d := g
	d[0], d[1], d[2], d[3] = g[3], g[2], g[1], g[0]
	d[4], d[5] = g[5], g[4]
	d[6], d[7] = g[7], g[6]
	return d
}

func guidFromDisk(d []byte) string {
	var g [16]byte
	copy(g[:], d)
	return formatGUID(guidToDisk(g)) // the swap is its own inverse
}

// chs encodes an LBA as the legacy cylinder/head/sector triple, saturating
// where CHS cannot address.
func chs(lba int64) [3]byte {
	const heads, secs = 255, 63
	c := lba / (heads * secs)
	if c > 1023 {
		return [3]byte{0xfe, 0xff, 0xff}
	}
	h := (lba / secs) % heads
	s := lba%secs + 1
	return [3]byte{byte(h), byte(s) | byte((c>>2)&0xc0), byte(c)}
}

func mbrEntry(b []byte, status, typ byte, first, count int64) {
	b[0] = status
	c := chs(first)
	copy(b[1:4], c[:])
	b[4] = typ
	c = chs(first + count - 1)
	copy(b[5:8], c[:])
	binary.LittleEndian.PutUint32(b[8:], uint32(first))
	binary.LittleEndian.PutUint32(b[12:], uint32(count))
}

// writeMBR writes an MBR (msdos) table with t's partitions into sector 0,
// keeping the boot code area as it is on the disk.
func writeMBR(dst Target, t *Table) error {
	if len(t.Partitions) > 4 {
		return fmt.Errorf("an msdos partition table holds at most 4 primary partitions, %d needed; use disk_label gpt", len(t.Partitions))
	}
	sig, err := parseDiskSig(t.DiskID)
	if err != nil {
		return err
	}
	sec := make([]byte, SectorSize)
	if _, err := dst.ReadAt(sec, 0); err != nil {
		return fmt.Errorf("read MBR: %w", err)
	}
	binary.LittleEndian.PutUint32(sec[mbrSigOffset:], sig)
	sec[444], sec[445] = 0, 0
	clear(sec[mbrEntryOffset:510])
	for _, p := range t.Partitions {
		if p.Number < 1 || p.Number > 4 {
			return fmt.Errorf("msdos partition number %d out of range", p.Number)
		}
		first, count := p.Start/SectorSize, p.Size/SectorSize
		if first+count > mbrMaxSectors {
			return fmt.Errorf("partition %d ends beyond the 2 TiB an msdos partition table can address; use disk_label gpt", p.Number)
		}
		status := byte(0)
		if p.Bootable {
			status = mbrBootable
		}
		mbrEntry(sec[mbrEntryOffset+16*(p.Number-1):], status, p.Type, first, count)
	}
	sec[510], sec[511] = 0x55, 0xaa
	if _, err := dst.WriteAt(sec, 0); err != nil {
		return fmt.Errorf("write MBR: %w", err)
	}
	return nil
}

func parseDiskSig(id string) (uint32, error) {
	b, err := hex.DecodeString(strings.TrimPrefix(id, "0x"))
	if err != nil || len(b) != 4 {
		return 0, fmt.Errorf("invalid MBR disk identifier %q", id)
	}
	return binary.BigEndian.Uint32(b), nil
}

func newDiskSig() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return fmt.Sprintf("0x%08x", binary.BigEndian.Uint32(b[:]))
}

// writeGPT writes a protective MBR and the primary and backup GPT headers and
// entry arrays for t, with the backup at the end of dst.
func writeGPT(dst Target, t *Table) error {
	sectors := dst.Size() / SectorSize
	firstUsable := int64(2 + gptEntrySecs)
	lastUsable := sectors - 2 - gptEntrySecs
	if lastUsable <= firstUsable {
		return fmt.Errorf("disk of %d bytes is too small for a GPT", dst.Size())
	}
	diskGUID, err := parseGUID(t.DiskID)
	if err != nil {
		return err
	}
	entries := make([]byte, gptEntries*gptEntrySize)
	for _, p := range t.Partitions {
		if p.Number < 1 || p.Number > gptEntries {
			return fmt.Errorf("GPT partition number %d out of range", p.Number)
		}
		first, last := p.Start/SectorSize, (p.Start+p.Size)/SectorSize-1
		if first < firstUsable || last > lastUsable || last < first {
			return fmt.Errorf("partition %d (sectors %d-%d) lies outside the usable sectors %d-%d", p.Number, first, last, firstUsable, lastUsable)
		}
		typ, err := parseGUID(p.TypeGUID)
		if err != nil {
			return err
		}
		guid, err := parseGUID(p.GUID)
		if err != nil {
			return err
		}
		e := entries[(p.Number-1)*gptEntrySize:][:gptEntrySize]
		td, gd := guidToDisk(typ), guidToDisk(guid)
		copy(e[0:], td[:])
		copy(e[16:], gd[:])
		binary.LittleEndian.PutUint64(e[32:], uint64(first))
		binary.LittleEndian.PutUint64(e[40:], uint64(last))
		binary.LittleEndian.PutUint64(e[48:], p.Attributes)
		name := utf16.Encode([]rune(p.Name))
		if len(name) > 36 {
			return fmt.Errorf("GPT partition name %q longer than 36 UTF-16 units", p.Name)
		}
		for i, u := range name {
			binary.LittleEndian.PutUint16(e[56+2*i:], u)
		}
	}
	entriesCRC := crc32.ChecksumIEEE(entries)
	header := func(my, alt, entriesLBA int64) []byte {
		h := make([]byte, SectorSize)
		copy(h, "EFI PART")
		binary.LittleEndian.PutUint32(h[8:], 0x00010000)
		binary.LittleEndian.PutUint32(h[12:], gptHeaderSize)
		binary.LittleEndian.PutUint64(h[24:], uint64(my))
		binary.LittleEndian.PutUint64(h[32:], uint64(alt))
		binary.LittleEndian.PutUint64(h[40:], uint64(firstUsable))
		binary.LittleEndian.PutUint64(h[48:], uint64(lastUsable))
		dg := guidToDisk(diskGUID)
		copy(h[56:], dg[:])
		binary.LittleEndian.PutUint64(h[72:], uint64(entriesLBA))
		binary.LittleEndian.PutUint32(h[80:], gptEntries)
		binary.LittleEndian.PutUint32(h[84:], gptEntrySize)
		binary.LittleEndian.PutUint32(h[88:], entriesCRC)
		binary.LittleEndian.PutUint32(h[16:], crc32.ChecksumIEEE(h[:gptHeaderSize]))
		return h
	}
	mbr := make([]byte, SectorSize)
	if _, err := dst.ReadAt(mbr, 0); err != nil {
		return fmt.Errorf("read MBR: %w", err)
	}
	clear(mbr[mbrEntryOffset:510])
	mbrEntry(mbr[mbrEntryOffset:], 0, mbrTypeGPT, 1, min(sectors-1, mbrMaxSectors))
	mbr[510], mbr[511] = 0x55, 0xaa
	writes := []struct {
		lba  int64
		data []byte
	}{
		{0, mbr},
		{1, header(1, sectors-1, 2)},
		{2, entries},
		{sectors - 1 - gptEntrySecs, entries},
		{sectors - 1, header(sectors-1, 1, sectors-1-gptEntrySecs)},
	}
	for _, w := range writes {
		if _, err := dst.WriteAt(w.data, w.lba*SectorSize); err != nil {
			return fmt.Errorf("write GPT at sector %d: %w", w.lba, err)
		}
	}
	return nil
}

// ReadTable reads dst's partition table: GPT when the MBR is protective
// (primary header, else the backup), MBR primary partitions otherwise.
func ReadTable(dst Target) (*Table, error) {
	sec := make([]byte, SectorSize)
	if _, err := dst.ReadAt(sec, 0); err != nil {
		return nil, fmt.Errorf("read MBR: %w", err)
	}
	if sec[510] != 0x55 || sec[511] != 0xaa {
		return nil, ErrNoTable
	}
	t := &Table{Label: LabelMSDOS, DiskID: fmt.Sprintf("0x%08x", binary.LittleEndian.Uint32(sec[mbrSigOffset:]))}
	for i := range 4 {
		e := sec[mbrEntryOffset+16*i:][:16]
		if e[4] == mbrTypeGPT {
			return readGPT(dst)
		}
	}
	for i := range 4 {
		e := sec[mbrEntryOffset+16*i:][:16]
		first, count := binary.LittleEndian.Uint32(e[8:]), binary.LittleEndian.Uint32(e[12:])
		if e[4] == 0 || count == 0 {
			continue
		}
		t.Partitions = append(t.Partitions, Partition{
			Number: i + 1, Start: int64(first) * SectorSize, Size: int64(count) * SectorSize,
			Type: e[4], Bootable: e[0]&mbrBootable != 0,
		})
	}
	return t, nil
}

func readGPT(dst Target) (*Table, error) {
	sectors := dst.Size() / SectorSize
	t, err := readGPTAt(dst, 1)
	if err == nil {
		return t, nil
	}
	if bt, berr := readGPTAt(dst, sectors-1); berr == nil {
		return bt, nil
	}
	return nil, fmt.Errorf("read GPT: %w", err)
}

func readGPTAt(dst Target, lba int64) (*Table, error) {
	h := make([]byte, SectorSize)
	if _, err := dst.ReadAt(h, lba*SectorSize); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	if string(h[:8]) != "EFI PART" {
		return nil, fmt.Errorf("no GPT header at sector %d", lba)
	}
	size := le.Uint32(h[12:])
	if size < gptHeaderSize || size > SectorSize {
		return nil, fmt.Errorf("GPT header at sector %d: bad header size %d", lba, size)
	}
	want := le.Uint32(h[16:])
	le.PutUint32(h[16:], 0)
	if crc32.ChecksumIEEE(h[:size]) != want {
		return nil, fmt.Errorf("GPT header at sector %d: CRC mismatch", lba)
	}
	entriesLBA, count, esize := int64(le.Uint64(h[72:])), le.Uint32(h[80:]), le.Uint32(h[84:])
	if esize < gptEntrySize || esize > 4096 || esize%8 != 0 || count > 1024 || entriesLBA < 0 || entriesLBA > dst.Size()/SectorSize {
		return nil, fmt.Errorf("GPT header at sector %d: bad entry array", lba)
	}
	entries := make([]byte, int64(count)*int64(esize))
	if _, err := dst.ReadAt(entries, entriesLBA*SectorSize); err != nil {
		return nil, fmt.Errorf("GPT entries: %w", err)
	}
	if crc32.ChecksumIEEE(entries) != le.Uint32(h[88:]) {
		return nil, fmt.Errorf("GPT entries at sector %d: CRC mismatch", entriesLBA)
	}
	t := &Table{Label: LabelGPT, DiskID: guidFromDisk(h[56:72])}
	for i := range int(count) {
		e := entries[i*int(esize):][:esize]
		if allZero(e[:16]) {
			continue
		}
		first, last := int64(le.Uint64(e[32:])), int64(le.Uint64(e[40:]))
		if first < 0 || last < first || last >= dst.Size()/SectorSize {
			continue // an entry no tool could use; never hand it to callers
		}
		units := make([]uint16, 0, 36)
		for k := 56; k+1 < 128; k += 2 {
			u := le.Uint16(e[k:])
			if u == 0 {
				break
			}
			units = append(units, u)
		}
		t.Partitions = append(t.Partitions, Partition{
			Number: i + 1, Start: first * SectorSize, Size: (last - first + 1) * SectorSize,
			TypeGUID: guidFromDisk(e[0:16]), GUID: guidFromDisk(e[16:32]),
			Attributes: le.Uint64(e[48:]), Name: string(utf16.Decode(units)),
		})
	}
	return t, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
