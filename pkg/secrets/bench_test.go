package secrets_test

import (
	"testing"

	"github.com/ferricbm/ferric/pkg/secrets"
)

// BenchmarkMaskTargetProperties masks what a listed volume target carries:
// an IQN (with ':'), CHAP credentials and plain values.
func BenchmarkMaskTargetProperties(b *testing.B) {
	props := map[string]any{"target_iqn": "iqn.2026-01.org.example:vol-1", "target_lun": 0,
		"target_portal": "192.0.2.10:3260", "auth_method": "CHAP", "auth_username": "user", "auth_password": "secret"}
	for b.Loop() {
		secrets.Mask(props)
	}
}
