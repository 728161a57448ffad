package iscsi

import (
	"context"
	"fmt"
	"strings"
)

// Target is one SendTargets record: a target name and the portals it is reachable on
// ("host:port", the portal group tag stripped).
type Target struct {
	IQN     string
	Portals []string
}

// Discover logs in to portal with a discovery session and returns every target it
// reports (SendTargets=All, RFC 7143 §12.3 and appendix C).
func Discover(ctx context.Context, portal string, opts Options) ([]Target, error) {
	opts = opts.withDefaults()
	conn, w, err := connect(ctx, portal, opts)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	res, err := runLogin(ctx, conn, w, opts, "")
	if err != nil {
		return nil, err
	}
	release := bound(ctx, conn, opts.CommandTimeout)
	defer release()
	kvs, err := sendTargets(w, res)
	if err != nil {
		return nil, netError(ctx, "iscsi discovery on "+portal, err)
	}
	// A failed logout does not make the answer less true; the connection closes anyway.
	_ = logoutSync(w, res)
	return parseTargets(kvs), nil
}

// sendTargets runs the Text Request exchange, following continuations (C bit, or
// F clear with a target transfer tag) until the final response.
func sendTargets(w *wire, res *loginResult) ([]keyValue, error) {
	const itt = 1
	data := encodeText([]keyValue{{"SendTargets", "All"}})
	ttt := uint32(reservedTag)
	var answer []byte
	for range 1024 {
		var h bhs
		h[0] = opTextReq
		h[1] = flagFinal
		be.PutUint32(h[16:20], itt)
		be.PutUint32(h[20:24], ttt)
		be.PutUint32(h[24:28], res.cmdSN)
		be.PutUint32(h[28:32], res.expStatSN)
		if err := w.send(&h, data); err != nil {
			return nil, err
		}
		res.cmdSN++
		resp, rdata, err := w.recv(res.params.MaxRecvDataSegmentLength)
		if err != nil {
			return nil, err
		}
		if resp.opcode() != opTextResp || resp.itt() != itt {
			return nil, fmt.Errorf("%w: opcode 0x%02x in answer to SendTargets", ErrProtocol, resp.opcode())
		}
		res.expStatSN = resp.statSN() + 1
		answer = append(answer, rdata...)
		if resp.flags()&flagFinal != 0 && resp.flags()&flagCont == 0 {
			return parseText(answer)
		}
		data, ttt = nil, resp.ttt()
	}
	return nil, fmt.Errorf("%w: SendTargets answer never ended", ErrProtocol)
}

func parseTargets(kvs []keyValue) []Target {
	var out []Target
	for _, kv := range kvs {
		switch kv.key {
		case "TargetName":
			out = append(out, Target{IQN: kv.value})
		case "TargetAddress":
			if len(out) == 0 {
				continue
			}
			addr := kv.value
			if i := strings.LastIndexByte(addr, ','); i >= 0 {
				addr = addr[:i]
			}
			last := &out[len(out)-1]
			last.Portals = append(last.Portals, addr)
		}
	}
	return out
}

func logoutSync(w *wire, res *loginResult) error {
	var h bhs
	h[0] = flagImmed | opLogoutReq
	h[1] = flagFinal
	be.PutUint32(h[16:20], 2)
	be.PutUint32(h[24:28], res.cmdSN)
	be.PutUint32(h[28:32], res.expStatSN)
	if err := w.send(&h, nil); err != nil {
		return err
	}
	resp, _, err := w.recv(res.params.MaxRecvDataSegmentLength)
	if err != nil {
		return err
	}
	if resp.opcode() != opLogoutResp || resp[2] != 0 {
		return fmt.Errorf("%w: logout answered with opcode 0x%02x response %d", ErrProtocol, resp.opcode(), resp[2])
	}
	return nil
}
