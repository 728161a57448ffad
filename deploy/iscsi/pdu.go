package iscsi

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// Opcodes of RFC 7143 §11. Initiator opcodes have bit 5 clear, target opcodes set.
const (
	opNOPOut     = 0x00
	opSCSICmd    = 0x01
	opLoginReq   = 0x03
	opTextReq    = 0x04
	opDataOut    = 0x05
	opLogoutReq  = 0x06
	opNOPIn      = 0x20
	opSCSIResp   = 0x21
	opTMFResp    = 0x22
	opLoginResp  = 0x23
	opTextResp   = 0x24
	opDataIn     = 0x25
	opLogoutResp = 0x26
	opR2T        = 0x31
	opAsync      = 0x32
	opReject     = 0x3f
)

const (
	bhsLen       = 48
	flagImmed    = 0x40 // byte 0: immediate delivery
	flagFinal    = 0x80 // byte 1: F bit
	flagCont     = 0x40 // byte 1 of Login/Text: C bit
	flagTransit  = 0x80 // byte 1 of Login: T bit
	reservedTag  = 0xffffffff
	maxSegLimit  = 1 << 24 // DataSegmentLength is 24 bits
	dataInStatus = 0x01    // Data-In byte 1: S bit
	dataInUnder  = 0x02    // Data-In / SCSI Response byte 1: U bit
	dataInOver   = 0x04    // O bit
)

var be = binary.BigEndian

// bhs is a Basic Header Segment. The accessors name the fields shared by all PDUs;
// opcode-specific fields are addressed by their RFC byte offsets at the call site.
type bhs [bhsLen]byte

func (h *bhs) opcode() byte   { return h[0] & 0x3f }
func (h *bhs) flags() byte    { return h[1] }
func (h *bhs) ahsLen() int    { return int(h[4]) * 4 }
func (h *bhs) dataLen() int   { return int(h[5])<<16 | int(h[6])<<8 | int(h[7]) }
func (h *bhs) itt() uint32    { return be.Uint32(h[16:20]) }
func (h *bhs) ttt() uint32    { return be.Uint32(h[20:24]) }
func (h *bhs) statSN() uint32 { return be.Uint32(h[24:28]) }
func (h *bhs) expCmdSN() uint32 {
	return be.Uint32(h[28:32])
}
func (h *bhs) maxCmdSN() uint32 { return be.Uint32(h[32:36]) }

func (h *bhs) setDataLen(n int) {
	h[5], h[6], h[7] = byte(n>>16), byte(n>>8), byte(n)
}

// padLen is the number of zero bytes that follow a data segment of n bytes.
func padLen(n int) int { return (4 - n%4) % 4 }

var zeroPad [4]byte

// readHeader reads one BHS and discards any additional header segments, which
// this initiator never negotiates and so never needs to interpret.
func readHeader(r *bufio.Reader, h *bhs) error {
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return err
	}
	if n := h.ahsLen(); n > 0 {
		if _, err := r.Discard(n); err != nil {
			return err
		}
	}
	return nil
}

// readData reads a data segment of n bytes plus its padding into a new slice.
func readData(r *bufio.Reader, n, limit int) ([]byte, error) {
	if n > limit {
		return nil, fmt.Errorf("%w: data segment of %d bytes exceeds the negotiated %d", ErrProtocol, n, limit)
	}
	buf := make([]byte, n+padLen(n))
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// snLess compares sequence numbers with serial number arithmetic (RFC 1982), as CmdSN
// and StatSN wrap around.
func snLess(a, b uint32) bool { return int32(a-b) < 0 }
