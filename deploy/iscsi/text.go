package iscsi

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// keyValue is one "key=value" text pair; order matters on the wire for SendTargets
// answers, so lists of pairs are used instead of maps.
type keyValue struct{ key, value string }

func encodeText(kvs []keyValue) []byte {
	var b bytes.Buffer
	for _, kv := range kvs {
		b.WriteString(kv.key)
		b.WriteByte('=')
		b.WriteString(kv.value)
		b.WriteByte(0)
	}
	return b.Bytes()
}

func parseText(data []byte) ([]keyValue, error) {
	var out []keyValue
	for _, item := range bytes.Split(data, []byte{0}) {
		if len(item) == 0 {
			continue
		}
		k, v, ok := strings.Cut(string(item), "=")
		if !ok {
			return nil, fmt.Errorf("%w: text item without '='", ErrProtocol)
		}
		out = append(out, keyValue{k, v})
	}
	return out, nil
}

func lookup(kvs []keyValue, key string) (string, bool) {
	for _, kv := range kvs {
		if kv.key == key {
			return kv.value, true
		}
	}
	return "", false
}

// parseNumber accepts the decimal and 0x-hex forms of RFC 7143 §6.1 numerical values.
func parseNumber(v string) (int, error) {
	if h, ok := strings.CutPrefix(strings.ToLower(v), "0x"); ok {
		n, err := strconv.ParseUint(h, 16, 32)
		return int(n), err
	}
	n, err := strconv.ParseUint(v, 10, 32)
	return int(n), err
}

// Params are the operational parameters in force for a session after login.
type Params struct {
	// MaxRecvDataSegmentLength is what this initiator declared: the largest Data-In segment.
	MaxRecvDataSegmentLength int
	// MaxXmitDataSegmentLength is what the target declared: the largest Data-Out segment.
	MaxXmitDataSegmentLength int
	MaxBurstLength           int
	FirstBurstLength         int
	ImmediateData            bool
	InitialR2T               bool
	MaxOutstandingR2T        int
}

// defaultParams are the RFC 7143 §13 defaults, in force for any key the target does not answer.
func defaultParams() Params {
	return Params{
		MaxRecvDataSegmentLength: 8192,
		MaxXmitDataSegmentLength: 8192,
		MaxBurstLength:           262144,
		FirstBurstLength:         65536,
		ImmediateData:            true,
		InitialR2T:               true,
		MaxOutstandingR2T:        1,
	}
}

// Largest value RFC 7143 allows for the burst lengths and segment lengths.
const maxNegotiableLength = 1<<24 - 1

// operationalOffer lists the keys proposed in the operational stage. Burst lengths are
// offered at the protocol maximum so the target's own limits decide (min function);
// InitialR2T=No and ImmediateData=Yes let the first burst of a write travel without
// waiting for an R2T when the target agrees.
func operationalOffer(maxRecv int) []keyValue {
	return []keyValue{
		{"HeaderDigest", "None"},
		{"DataDigest", "None"},
		{"MaxConnections", "1"},
		{"InitialR2T", "No"},
		{"ImmediateData", "Yes"},
		{"MaxRecvDataSegmentLength", strconv.Itoa(maxRecv)},
		{"MaxBurstLength", strconv.Itoa(maxNegotiableLength)},
		{"FirstBurstLength", strconv.Itoa(maxNegotiableLength)},
		{"DefaultTime2Wait", "0"},
		{"DefaultTime2Retain", "0"},
		{"MaxOutstandingR2T", "1"},
		{"DataPDUInOrder", "Yes"},
		{"DataSequenceInOrder", "Yes"},
		{"ErrorRecoveryLevel", "0"},
	}
}

// applyAnswer folds one operational key from the target into p. Values the target refuses
// ("Reject", "Irrelevant", "NotUnderstood") leave the default in force, except for the
// digests and ordering, whose defaults this initiator cannot honour.
func (p *Params) applyAnswer(key, value string) error {
	num := func(dst *int) error {
		n, err := parseNumber(value)
		switch {
		case err != nil:
			// Reject or Irrelevant: the default stays in force.
		case n <= 0 || n > maxNegotiableLength:
			return fmt.Errorf("%w: %s=%s out of range", ErrProtocol, key, value)
		default:
			*dst = n
		}
		return nil
	}
	switch key {
	case "HeaderDigest", "DataDigest":
		if value != "None" {
			return fmt.Errorf("%w: target insists on %s=%s; digests are not supported", ErrProtocol, key, value)
		}
	case "DataPDUInOrder", "DataSequenceInOrder":
		if value == "No" {
			return fmt.Errorf("%w: target answered %s=No", ErrProtocol, key)
		}
	case "ErrorRecoveryLevel":
		if value != "0" {
			return fmt.Errorf("%w: target answered ErrorRecoveryLevel=%s to an offer of 0", ErrProtocol, value)
		}
	case "MaxRecvDataSegmentLength":
		return num(&p.MaxXmitDataSegmentLength)
	case "MaxBurstLength":
		return num(&p.MaxBurstLength)
	case "FirstBurstLength":
		return num(&p.FirstBurstLength)
	case "MaxOutstandingR2T":
		return num(&p.MaxOutstandingR2T)
	case "ImmediateData":
		p.ImmediateData = value == "Yes"
	case "InitialR2T":
		p.InitialR2T = value != "No"
	}
	return nil
}
