package iscsi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// ErrOutOfRange is returned for I/O beyond the end of a LUN.
var ErrOutOfRange = errors.New("iscsi I/O beyond the end of the LUN")

// InquiryData is the identifying part of standard INQUIRY data (SPC-4 §6.6.2).
type InquiryData struct {
	PeripheralQualifier  byte
	PeripheralDeviceType byte // 0x00 = direct-access block device (a disk)
	Vendor               string
	Product              string
	Revision             string
}

// Inquiry sends a standard INQUIRY to lun.
func (s *Session) Inquiry(ctx context.Context, lun uint64) (*InquiryData, error) {
	buf := make([]byte, 96)
	n, err := s.do(ctx, &command{lun: lun, cdb: cdbInquiry(uint16(len(buf))), in: buf})
	if err != nil {
		return nil, fmt.Errorf("inquiry lun %d on %s: %w", lun, s.target, err)
	}
	if n < 36 {
		return nil, fmt.Errorf("inquiry lun %d on %s: %w: %d bytes of data", lun, s.target, ErrProtocol, n)
	}
	return &InquiryData{
		PeripheralQualifier:  buf[0] >> 5,
		PeripheralDeviceType: buf[0] & 0x1f,
		Vendor:               strings.TrimSpace(string(buf[8:16])),
		Product:              strings.TrimSpace(string(buf[16:32])),
		Revision:             strings.TrimSpace(string(buf[32:36])),
	}, nil
}

// ReportLUNs lists the LUNs of the target (REPORT LUNS, addressed to LUN 0).
func (s *Session) ReportLUNs(ctx context.Context) ([]uint64, error) {
	size := 8 + 8*64
	for range 2 {
		buf := make([]byte, size)
		n, err := s.do(ctx, &command{cdb: cdbReportLUNs(uint32(size)), in: buf})
		if err != nil {
			return nil, fmt.Errorf("report luns on %s: %w", s.target, err)
		}
		if n < 8 {
			return nil, fmt.Errorf("report luns on %s: %w: %d bytes of data", s.target, ErrProtocol, n)
		}
		listLen := int(be.Uint32(buf[0:4]))
		if 8+listLen > size {
			size = 8 + listLen // the list outgrew the buffer: ask again with room for all
			continue
		}
		luns := make([]uint64, 0, listLen/8)
		for off := 8; off+8 <= min(8+listLen, n); off += 8 {
			luns = append(luns, decodeLUN(buf[off:off+8]))
		}
		return luns, nil
	}
	return nil, fmt.Errorf("report luns on %s: %w: list keeps growing", s.target, ErrProtocol)
}

// FirstDisk returns the lowest-numbered LUN that is a direct-access block device (tgtd
// exports its controller as LUN 0 and the disks from LUN 1).
func (s *Session) FirstDisk(ctx context.Context) (uint64, error) {
	luns, err := s.ReportLUNs(ctx)
	if err != nil {
		return 0, err
	}
	for _, lun := range luns {
		inq, err := s.Inquiry(ctx, lun)
		if err != nil {
			return 0, err
		}
		if inq.PeripheralQualifier == 0 && inq.PeripheralDeviceType == 0 {
			return lun, nil
		}
	}
	return 0, fmt.Errorf("target %s exports no disk LUN", s.target)
}

// LUN is a logical unit of a session used as a block device. Its methods are safe for
// concurrent use; they share the session's queue depth.
type LUN struct {
	s         *Session
	id        uint64
	blockSize int
	blocks    uint64
	chunk     int // bytes per SCSI command
}

// OpenLUN reads the capacity of lun and returns it as a block device.
func (s *Session) OpenLUN(ctx context.Context, lun uint64) (*LUN, error) {
	if lun > maxLUN {
		return nil, fmt.Errorf("lun %d: only LUNs up to %d are supported", lun, maxLUN)
	}
	l := &LUN{s: s, id: lun}
	if err := l.readCapacity(ctx); err != nil {
		return nil, fmt.Errorf("read capacity of lun %d on %s: %w", lun, s.target, err)
	}
	blocks := max(s.opts.MaxTransferLength/l.blockSize, 1)
	limit, err := l.maxTransferBlocks(ctx)
	if err != nil {
		return nil, fmt.Errorf("block limits of lun %d on %s: %w", lun, s.target, err)
	}
	if limit > 0 {
		blocks = min(blocks, limit)
	}
	l.chunk = blocks * l.blockSize
	return l, nil
}

// maxTransferBlocks reads MAXIMUM TRANSFER LENGTH from the Block Limits VPD page
// (SBC-3 §6.5.3), so commands never exceed what the device accepts. 0 means no limit
// reported; a device without the page (ILLEGAL REQUEST) reports none.
func (l *LUN) maxTransferBlocks(ctx context.Context) (int, error) {
	buf := make([]byte, 64)
	cdb := cdbInquiry(uint16(len(buf)))
	cdb[1], cdb[2] = 0x01, 0xb0 // EVPD, page Block Limits
	n, err := l.s.do(ctx, &command{lun: l.id, cdb: cdb, in: buf})
	if key, ok := SenseKey(err); ok && key == SenseIllegalRequest {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if n < 12 || buf[1] != 0xb0 {
		return 0, nil
	}
	return int(be.Uint32(buf[8:12])), nil
}

func (l *LUN) readCapacity(ctx context.Context) error {
	buf := make([]byte, 32)
	n, err := l.s.do(ctx, &command{lun: l.id, cdb: cdbReadCapacity16(32), in: buf})
	if err == nil {
		if n < 12 {
			return fmt.Errorf("%w: READ CAPACITY(16) returned %d bytes", ErrProtocol, n)
		}
		return l.setCapacity(be.Uint64(buf[0:8]), be.Uint32(buf[8:12]))
	}
	if key, ok := SenseKey(err); !ok || key != SenseIllegalRequest {
		return err
	}
	// READ CAPACITY(16) is optional for small devices; (10) is mandatory.
	var cdb [16]byte
	cdb[0] = opReadCapacity10
	buf = buf[:8]
	if n, err = l.s.do(ctx, &command{lun: l.id, cdb: cdb, in: buf}); err != nil {
		return err
	}
	if n < 8 {
		return fmt.Errorf("%w: READ CAPACITY(10) returned %d bytes", ErrProtocol, n)
	}
	last := be.Uint32(buf[0:4])
	if last == 0xffffffff {
		return errors.New("device needs READ CAPACITY(16), which it rejected")
	}
	return l.setCapacity(uint64(last), be.Uint32(buf[4:8]))
}

func (l *LUN) setCapacity(lastLBA uint64, blockSize uint32) error {
	if blockSize == 0 || blockSize > 1<<20 || lastLBA == ^uint64(0) {
		return fmt.Errorf("%w: capacity %d blocks of %d bytes", ErrProtocol, lastLBA+1, blockSize)
	}
	l.blocks, l.blockSize = lastLBA+1, int(blockSize)
	return nil
}

// ID returns the LUN number.
func (l *LUN) ID() uint64 { return l.id }

// BlockSize returns the logical block length in bytes.
func (l *LUN) BlockSize() int { return l.blockSize }

// Blocks returns the number of logical blocks.
func (l *LUN) Blocks() uint64 { return l.blocks }

// Size returns the capacity in bytes.
func (l *LUN) Size() int64 { return int64(l.blocks) * int64(l.blockSize) }

// Read fills buf, a whole number of blocks, from lba on.
func (l *LUN) Read(ctx context.Context, lba uint64, buf []byte) error {
	return l.transfer(ctx, lba, buf, false)
}

// Write writes buf, a whole number of blocks, from lba on. buf is sent as is, without
// a copy, and must not change until Write returns.
func (l *LUN) Write(ctx context.Context, lba uint64, buf []byte) error {
	return l.transfer(ctx, lba, buf, true)
}

// Sync makes everything written so far durable (SYNCHRONIZE CACHE for the whole LUN).
func (l *LUN) Sync(ctx context.Context) error {
	var cdb [16]byte
	cdb[0] = opSyncCache16 // LBA 0, 0 blocks: the whole medium
	_, err := l.s.do(ctx, &command{lun: l.id, cdb: cdb, timeout: l.s.opts.SyncTimeout})
	if key, ok := SenseKey(err); ok && key == SenseIllegalRequest {
		cdb = [16]byte{opSyncCache10}
		_, err = l.s.do(ctx, &command{lun: l.id, cdb: cdb, timeout: l.s.opts.SyncTimeout})
	}
	if err != nil {
		return fmt.Errorf("sync lun %d on %s: %w", l.id, l.s.target, err)
	}
	return nil
}

func (l *LUN) check(lba uint64, n int) error {
	if n%l.blockSize != 0 {
		return fmt.Errorf("iscsi I/O of %d bytes is not a multiple of the %d-byte block", n, l.blockSize)
	}
	if blocks := uint64(n / l.blockSize); lba > l.blocks || blocks > l.blocks-lba {
		return fmt.Errorf("%w: blocks %d+%d of %d", ErrOutOfRange, lba, blocks, l.blocks)
	}
	return nil
}

// transfer splits buf into commands of at most chunk bytes and keeps up to the queue
// depth of them in flight. After a failure no new command starts; those in flight finish.
func (l *LUN) transfer(ctx context.Context, lba uint64, buf []byte, write bool) error {
	if err := l.check(lba, len(buf)); err != nil {
		return err
	}
	if len(buf) <= l.chunk {
		return l.command(ctx, lba, buf, write)
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	sem := make(chan struct{}, l.s.opts.QueueDepth)
	for off := 0; off < len(buf); off += l.chunk {
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed {
			break
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			mu.Lock()
			firstErr = cmp.Or(firstErr, context.Cause(ctx))
			mu.Unlock()
		}
		if ctx.Err() != nil {
			break
		}
		end := min(off+l.chunk, len(buf))
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := l.command(ctx, lba+uint64(off/l.blockSize), buf[off:end], write)
			<-sem
			if err != nil {
				mu.Lock()
				firstErr = cmp.Or(firstErr, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return firstErr
}

func (l *LUN) command(ctx context.Context, lba uint64, buf []byte, write bool) error {
	blocks := uint32(len(buf) / l.blockSize)
	c := &command{lun: l.id}
	if write {
		c.cdb, c.out = cdbRW16(opWrite16, lba, blocks), buf
	} else {
		c.cdb, c.in = cdbRW16(opRead16, lba, blocks), buf
	}
	n, err := l.s.do(ctx, c)
	if err == nil && !write && n != len(buf) {
		err = fmt.Errorf("%w: READ(16) returned %d of %d bytes", ErrProtocol, n, len(buf))
	}
	if err != nil {
		return fmt.Errorf("lun %d lba %d: %w", l.id, lba, err)
	}
	return nil
}

// Identity is what a LUN reports about the disk behind it: its unit serial
// number (VPD page 0x80, SPC-4 §7.8.16) and the NAA and EUI-64 names of the
// logical unit in its device identification page (0x83, §7.8.6), as "0x"
// and lower-case hex, the form of Linux's ID_WWN and of root device hints.
type Identity struct {
	Serial string
	WWNs   []string
}

// Identity reads the LUN's serial number and world wide names; a device
// without one of the pages (ILLEGAL REQUEST) reports none of it.
func (l *LUN) Identity(ctx context.Context) (Identity, error) {
	var id Identity
	serial, err := l.vpd(ctx, 0x80)
	if err != nil {
		return id, fmt.Errorf("unit serial number of lun %d on %s: %w", l.id, l.s.target, err)
	}
	id.Serial = strings.TrimSpace(string(serial))
	names, err := l.vpd(ctx, 0x83)
	if err != nil {
		return id, fmt.Errorf("device identification of lun %d on %s: %w", l.id, l.s.target, err)
	}
	for len(names) >= 4 {
		n := int(names[3])
		if 4+n > len(names) {
			break
		}
		association, kind := names[1]>>4&0x3, names[1]&0xf
		if association == 0 && (kind == 2 || kind == 3) && n > 0 {
			id.WWNs = append(id.WWNs, fmt.Sprintf("0x%x", names[4:4+n]))
		}
		names = names[4+n:]
	}
	return id, nil
}

// vpd returns the payload of a VPD page, nil when the device has no such page.
func (l *LUN) vpd(ctx context.Context, page byte) ([]byte, error) {
	buf := make([]byte, 255)
	cdb := cdbInquiry(uint16(len(buf)))
	cdb[1], cdb[2] = 0x01, page
	n, err := l.s.do(ctx, &command{lun: l.id, cdb: cdb, in: buf})
	if key, ok := SenseKey(err); ok && key == SenseIllegalRequest {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if n < 4 || buf[1] != page {
		return nil, fmt.Errorf("%w: VPD page 0x%02x answered as page 0x%02x, %d bytes", ErrProtocol, page, buf[1], n)
	}
	length := int(be.Uint16(buf[2:4]))
	return buf[4:min(4+length, n)], nil
}
