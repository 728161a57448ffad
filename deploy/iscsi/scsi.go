package iscsi

import (
	"errors"
	"fmt"
)

// SCSI status codes (SAM-5).
const (
	statusGood           = 0x00
	statusCheckCondition = 0x02
	statusBusy           = 0x08
	statusResvConflict   = 0x18
	statusTaskSetFull    = 0x28
	statusTaskAborted    = 0x40
)

// Sense keys (SPC-4) this package reacts to.
const (
	SenseNotReady       = 0x2
	SenseMediumError    = 0x3
	SenseIllegalRequest = 0x5
	SenseUnitAttention  = 0x6
	SenseDataProtect    = 0x7
	SenseAbortedCommand = 0xb
)

// Sense is the decoded part of SCSI sense data that identifies the condition.
type Sense struct {
	Key  byte
	ASC  byte
	ASCQ byte
}

// SCSIError is a SCSI command that completed with a status other than GOOD, or that the
// target could not execute (Response != 0).
type SCSIError struct {
	Op       string // command name, e.g. "WRITE(16)"
	Response byte   // iSCSI response code; 0 = the target completed the command
	Status   byte   // SCSI status
	Sense    *Sense // nil when the target sent no sense data
}

func (e *SCSIError) Error() string {
	if e.Response != 0 {
		return fmt.Sprintf("scsi %s: target failure (iscsi response 0x%02x)", e.Op, e.Response)
	}
	msg := fmt.Sprintf("scsi %s: %s", e.Op, statusName(e.Status))
	if e.Sense != nil {
		msg += fmt.Sprintf(": %s, asc/ascq 0x%02x/0x%02x", senseKeyName(e.Sense.Key), e.Sense.ASC, e.Sense.ASCQ)
		if d := ascName(e.Sense.ASC, e.Sense.ASCQ); d != "" {
			msg += " (" + d + ")"
		}
	}
	return msg
}

// SenseKey returns the sense key of a CHECK CONDITION error, or false.
func SenseKey(err error) (byte, bool) {
	var se *SCSIError
	if errors.As(err, &se) && se.Sense != nil {
		return se.Sense.Key, true
	}
	return 0, false
}

// retryable reports conditions that say nothing about the command itself: the target
// did not execute it and will accept it again shortly.
func (e *SCSIError) retryable() bool {
	if e.Response != 0 {
		return false
	}
	switch e.Status {
	case statusBusy, statusTaskSetFull:
		return true
	case statusCheckCondition:
		return e.Sense != nil && e.Sense.Key == SenseUnitAttention
	}
	return false
}

func statusName(s byte) string {
	switch s {
	case statusGood:
		return "GOOD"
	case statusCheckCondition:
		return "CHECK CONDITION"
	case statusBusy:
		return "BUSY"
	case statusResvConflict:
		return "RESERVATION CONFLICT"
	case statusTaskSetFull:
		return "TASK SET FULL"
	case statusTaskAborted:
		return "TASK ABORTED"
	}
	return fmt.Sprintf("status 0x%02x", s)
}

func senseKeyName(k byte) string {
	names := [...]string{"NO SENSE", "RECOVERED ERROR", "NOT READY", "MEDIUM ERROR", "HARDWARE ERROR",
		"ILLEGAL REQUEST", "UNIT ATTENTION", "DATA PROTECT", "BLANK CHECK", "VENDOR SPECIFIC",
		"COPY ABORTED", "ABORTED COMMAND", "RESERVED", "VOLUME OVERFLOW", "MISCOMPARE", "COMPLETED"}
	return names[k&0x0f]
}

func ascName(asc, ascq byte) string {
	switch uint16(asc)<<8 | uint16(ascq) {
	case 0x0400:
		return "logical unit not ready"
	case 0x0c00:
		return "write error"
	case 0x1100:
		return "unrecovered read error"
	case 0x2000:
		return "invalid command operation code"
	case 0x2100:
		return "logical block address out of range"
	case 0x2400:
		return "invalid field in CDB"
	case 0x2500:
		return "logical unit not supported"
	case 0x2700:
		return "write protected"
	case 0x2900:
		return "power on, reset, or bus device reset occurred"
	case 0x2a01:
		return "mode parameters changed"
	case 0x3a00:
		return "medium not present"
	case 0x3f0e:
		return "reported luns data has changed"
	}
	return ""
}

// parseSense decodes fixed (0x70/0x71) and descriptor (0x72/0x73) format sense data.
func parseSense(b []byte) *Sense {
	if len(b) < 1 {
		return nil
	}
	switch b[0] & 0x7f {
	case 0x70, 0x71:
		s := &Sense{}
		if len(b) > 2 {
			s.Key = b[2] & 0x0f
		}
		if len(b) > 13 {
			s.ASC, s.ASCQ = b[12], b[13]
		}
		return s
	case 0x72, 0x73:
		if len(b) < 4 {
			return nil
		}
		return &Sense{Key: b[1] & 0x0f, ASC: b[2], ASCQ: b[3]}
	}
	return nil
}

// CDB builders (SBC-3, SPC-4). Every CDB is carried in the 16-byte CDB field of the SCSI
// Command PDU; shorter ones are zero-padded.

func cdbRW16(op byte, lba uint64, blocks uint32) [16]byte {
	var c [16]byte
	c[0] = op
	be.PutUint64(c[2:10], lba)
	be.PutUint32(c[10:14], blocks)
	return c
}

const (
	opRead16         = 0x88
	opWrite16        = 0x8a
	opSyncCache16    = 0x91
	opSyncCache10    = 0x35
	opReadCapacity16 = 0x9e
	opReadCapacity10 = 0x25
	opInquiry        = 0x12
	opReportLUNs     = 0xa0
	opTestUnitReady  = 0x00
)

func cdbReadCapacity16(alloc uint32) [16]byte {
	var c [16]byte
	c[0] = opReadCapacity16
	c[1] = 0x10 // service action READ CAPACITY(16)
	be.PutUint32(c[10:14], alloc)
	return c
}

func cdbInquiry(alloc uint16) [16]byte {
	var c [16]byte
	c[0] = opInquiry
	be.PutUint16(c[3:5], alloc)
	return c
}

func cdbReportLUNs(alloc uint32) [16]byte {
	var c [16]byte
	c[0] = opReportLUNs
	be.PutUint32(c[6:10], alloc)
	return c
}

func opName(op byte) string {
	switch op {
	case opRead16:
		return "READ(16)"
	case opWrite16:
		return "WRITE(16)"
	case opSyncCache16:
		return "SYNCHRONIZE CACHE(16)"
	case opSyncCache10:
		return "SYNCHRONIZE CACHE(10)"
	case opReadCapacity16:
		return "READ CAPACITY(16)"
	case opReadCapacity10:
		return "READ CAPACITY(10)"
	case opInquiry:
		return "INQUIRY"
	case opReportLUNs:
		return "REPORT LUNS"
	case opTestUnitReady:
		return "TEST UNIT READY"
	}
	return fmt.Sprintf("opcode 0x%02x", op)
}

// encodeLUN builds the 8-byte LUN field (SAM-5 §4.7): peripheral device addressing below
// 256, flat space addressing up to 16383.
func encodeLUN(id uint64) [8]byte {
	var b [8]byte
	if id < 256 {
		b[1] = byte(id)
	} else {
		b[0] = 0x40 | byte(id>>8)
		b[1] = byte(id)
	}
	return b
}

func decodeLUN(b []byte) uint64 {
	switch b[0] >> 6 {
	case 0:
		return uint64(b[1])
	case 1:
		return uint64(b[0]&0x3f)<<8 | uint64(b[1])
	}
	return be.Uint64(b)
}

const maxLUN = 1<<14 - 1
