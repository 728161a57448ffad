package iscsi

import (
	"bufio"
	"context"
	"crypto/md5" // CHAP (RFC 1994) is defined over MD5
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Login stages (RFC 7143 §11.12.1, CSG/NSG).
const (
	stageSecurity    = 0
	stageOperational = 1
	stageFullFeature = 3
)

// wire is the synchronous PDU exchange used before the reader goroutine exists (login)
// and for the short-lived discovery sessions.
type wire struct {
	conn net.Conn
	br   *bufio.Reader
}

func (w *wire) send(h *bhs, data []byte) error {
	h.setDataLen(len(data))
	bufs := net.Buffers{h[:], data, zeroPad[:padLen(len(data))]}
	_, err := bufs.WriteTo(w.conn)
	return err
}

func (w *wire) recv(limit int) (*bhs, []byte, error) {
	h := new(bhs)
	if err := readHeader(w.br, h); err != nil {
		return nil, nil, err
	}
	data, err := readData(w.br, h.dataLen(), limit)
	return h, data, err
}

// bound makes every blocking read and write on conn honour both ctx and timeout.
// The returned function must be called once the exchange is over.
func bound(ctx context.Context, conn net.Conn, timeout time.Duration) func() {
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	return func() {
		stop()
		_ = conn.SetDeadline(time.Time{})
	}
}

// netError turns a deadline expiry on the connection into ErrTimeout or the context's
// error, so callers see why the exchange stopped rather than "i/o timeout".
func netError(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", what, context.Cause(ctx))
	}
	if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("%s: %w", what, ErrTimeout)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// loginResult is the session state a successful login hands over to the full feature phase.
type loginResult struct {
	params    Params
	tsih      uint16
	cmdSN     uint32
	expCmdSN  uint32
	maxCmdSN  uint32
	expStatSN uint32
}

type loginSpec struct {
	initiator  string
	target     string // empty for a discovery session
	chapUser   string
	chapSecret string
	maxRecv    int
	isid       [6]byte
}

type loginState struct {
	w    *wire
	spec loginSpec
	res  loginResult
}

// login runs the security and operational stages (RFC 7143 §6.3) up to the full
// feature phase. No error it returns contains the CHAP secret.
func login(w *wire, spec loginSpec) (*loginResult, error) {
	l := &loginState{w: w, spec: spec}
	l.res.params = defaultParams()
	l.res.params.MaxRecvDataSegmentLength = spec.maxRecv
	l.res.cmdSN = 1
	if err := l.security(); err != nil {
		return nil, err
	}
	if err := l.operational(); err != nil {
		return nil, err
	}
	return &l.res, nil
}

func (l *loginState) targetLabel() string {
	if l.spec.target == "" {
		return "discovery session"
	}
	return l.spec.target
}

// exchange sends one Login Request and collects the complete answer, following the C bit
// when the target splits its keys over several responses.
func (l *loginState) exchange(csg, nsg byte, transit bool, kvs []keyValue) (*bhs, []keyValue, error) {
	data := encodeText(kvs)
	var answer []byte
	for {
		var h bhs
		h[0] = flagImmed | opLoginReq
		h[1] = csg << 2
		if transit {
			h[1] |= flagTransit | nsg
		}
		copy(h[8:14], l.spec.isid[:])
		be.PutUint16(h[14:16], l.res.tsih)
		be.PutUint32(h[24:28], l.res.cmdSN)
		be.PutUint32(h[28:32], l.res.expStatSN)
		if err := l.w.send(&h, data); err != nil {
			return nil, nil, err
		}
		resp, rdata, err := l.w.recv(maxSegLimit)
		if err != nil {
			return nil, nil, err
		}
		if resp.opcode() != opLoginResp {
			return nil, nil, fmt.Errorf("%w: opcode 0x%02x during login", ErrProtocol, resp.opcode())
		}
		if class, detail := resp[36], resp[37]; class != 0 {
			return nil, nil, &LoginError{Target: l.targetLabel(), Class: class, Detail: detail}
		}
		l.res.tsih = be.Uint16(resp[14:16])
		l.res.expStatSN = resp.statSN() + 1
		l.res.expCmdSN = resp.expCmdSN()
		l.res.maxCmdSN = resp.maxCmdSN()
		answer = append(answer, rdata...)
		if resp.flags()&flagCont == 0 {
			kv, err := parseText(answer)
			return resp, kv, err
		}
		data, transit = nil, false
	}
}

func transitTo(h *bhs, nsg byte) bool {
	return h.flags()&flagTransit != 0 && h.flags()&0x03 == nsg
}

// finishStage asks to leave csg for nsg until the target agrees; a target may need a few
// empty rounds before it sets the T bit.
func (l *loginState) finishStage(h *bhs, csg, nsg byte) error {
	for range 8 {
		if transitTo(h, nsg) {
			return nil
		}
		var err error
		if h, _, err = l.exchange(csg, nsg, true, nil); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: target never agreed to leave login stage %d", ErrProtocol, csg)
}

func (l *loginState) security() error {
	kvs := []keyValue{{"InitiatorName", l.spec.initiator}}
	if l.spec.target == "" {
		kvs = append(kvs, keyValue{"SessionType", "Discovery"})
	} else {
		kvs = append(kvs, keyValue{"SessionType", "Normal"}, keyValue{"TargetName", l.spec.target})
	}
	useCHAP := l.spec.chapUser != ""
	if !useCHAP {
		kvs = append(kvs, keyValue{"AuthMethod", "None"})
		h, ans, err := l.exchange(stageSecurity, stageOperational, true, kvs)
		if err != nil {
			return err
		}
		if m, _ := lookup(ans, "AuthMethod"); m != "None" {
			return fmt.Errorf("%w: %s requires authentication (AuthMethod=%s) and no CHAP credentials were given",
				ErrAuthentication, l.targetLabel(), m)
		}
		return l.finishStage(h, stageSecurity, stageOperational)
	}
	kvs = append(kvs, keyValue{"AuthMethod", "CHAP,None"})
	h, ans, err := l.exchange(stageSecurity, stageOperational, false, kvs)
	if err != nil {
		return err
	}
	switch m, _ := lookup(ans, "AuthMethod"); m {
	case "None":
		return l.finishStage(h, stageSecurity, stageOperational)
	case "CHAP":
	default:
		return fmt.Errorf("%w: target chose AuthMethod=%q", ErrProtocol, m)
	}
	_, ans, err = l.exchange(stageSecurity, stageOperational, false, []keyValue{{"CHAP_A", "5"}})
	if err != nil {
		return err
	}
	response, err := chapResponse(ans, l.spec.chapSecret)
	if err != nil {
		return err
	}
	h, _, err = l.exchange(stageSecurity, stageOperational, true,
		[]keyValue{{"CHAP_N", l.spec.chapUser}, {"CHAP_R", response}})
	if err != nil {
		return err
	}
	return l.finishStage(h, stageSecurity, stageOperational)
}

// chapResponse computes CHAP_R = MD5(identifier || secret || challenge) (RFC 1994 §4.1)
// from the target's CHAP_A/CHAP_I/CHAP_C.
func chapResponse(ans []keyValue, secret string) (string, error) {
	if a, _ := lookup(ans, "CHAP_A"); a != "5" {
		return "", fmt.Errorf("%w: target chose CHAP_A=%q, only MD5 (5) is supported", ErrProtocol, a)
	}
	idText, _ := lookup(ans, "CHAP_I")
	id, err := strconv.ParseUint(idText, 10, 8)
	if err != nil {
		return "", fmt.Errorf("%w: bad CHAP_I", ErrProtocol)
	}
	chalText, _ := lookup(ans, "CHAP_C")
	challenge, err := decodeBinary(chalText)
	if err != nil || len(challenge) == 0 {
		return "", fmt.Errorf("%w: bad CHAP_C", ErrProtocol)
	}
	m := md5.New()
	m.Write([]byte{byte(id)})
	m.Write([]byte(secret))
	m.Write(challenge)
	return "0x" + hex.EncodeToString(m.Sum(nil)), nil
}

// decodeBinary decodes the 0x (hex) and 0b (base64) binary value forms of RFC 7143 §6.1.
func decodeBinary(v string) ([]byte, error) {
	switch {
	case strings.HasPrefix(v, "0x") || strings.HasPrefix(v, "0X"):
		return hex.DecodeString(v[2:])
	case strings.HasPrefix(v, "0b") || strings.HasPrefix(v, "0B"):
		return base64.StdEncoding.DecodeString(v[2:])
	}
	return nil, fmt.Errorf("%w: binary value without 0x/0b prefix", ErrProtocol)
}

// declarative keys need no answer from the initiator.
var declarative = map[string]bool{
	"MaxRecvDataSegmentLength": true, "TargetAlias": true, "TargetAddress": true,
	"TargetPortalGroupTag": true,
}

func (l *loginState) operational() error {
	offer := operationalOffer(l.spec.maxRecv)
	if l.spec.target == "" {
		// Session-wide keys are irrelevant to a discovery session.
		offer = []keyValue{{"HeaderDigest", "None"}, {"DataDigest", "None"},
			{"MaxRecvDataSegmentLength", strconv.Itoa(l.spec.maxRecv)}}
	}
	h, ans, err := l.exchange(stageOperational, stageFullFeature, true, offer)
	for round := 0; ; round++ {
		if err != nil {
			return err
		}
		var replies []keyValue
		for _, kv := range ans {
			if _, offered := lookup(offer, kv.key); offered || declarative[kv.key] {
				if err := l.res.params.applyAnswer(kv.key, kv.value); err != nil {
					return err
				}
				continue
			}
			// A key the target proposes on its own needs an answer; none of them
			// are ones this initiator relies on.
			replies = append(replies, keyValue{kv.key, "NotUnderstood"})
		}
		if transitTo(h, stageFullFeature) {
			break
		}
		if round == 8 {
			return fmt.Errorf("%w: operational negotiation did not converge", ErrProtocol)
		}
		h, ans, err = l.exchange(stageOperational, stageFullFeature, true, replies)
	}
	p := &l.res.params
	if p.FirstBurstLength > p.MaxBurstLength {
		p.FirstBurstLength = p.MaxBurstLength
	}
	return nil
}
