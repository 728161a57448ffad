package iscsi

import "testing"

// The parsers below read bytes chosen by the target; whatever it sends, they must
// return an error or a value, never panic the conductor.

func FuzzParseTargetText(f *testing.F) {
	f.Add([]byte("TargetName=iqn.2026-12.test:a\x00TargetAddress=127.0.0.1:3260,1\x00"))
	f.Add([]byte("CHAP_A=5\x00CHAP_I=7\x00CHAP_C=0x0a0b0c\x00"))
	f.Add([]byte("MaxBurstLength=0x40000\x00InitialR2T=No\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		kvs, err := parseText(data)
		if err != nil {
			return
		}
		parseTargets(kvs)
		_, _ = chapResponse(kvs, "secret")
		p := defaultParams()
		for _, kv := range kvs {
			if p.applyAnswer(kv.key, kv.value) == nil && (p.MaxBurstLength <= 0 || p.MaxXmitDataSegmentLength <= 0) {
				t.Fatalf("accepted non-positive length from %q=%q", kv.key, kv.value)
			}
		}
	})
}

func FuzzParseSense(f *testing.F) {
	f.Add([]byte{0x70, 0, 0x05, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0x24, 0x00})
	f.Add([]byte{0x72, 0x06, 0x29, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		if s := parseSense(data); s != nil && s.Key > 0x0f {
			t.Fatalf("sense key %d out of range", s.Key)
		}
	})
}
