package harness

import (
	"crypto/rand"
	"encoding/hex"
)

// RandomHex returns n random bytes as hex, for unique names.
func RandomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// RandomMAC returns a random locally administered-looking MAC in the QEMU
// range, lower case as the API normalises it.
func RandomMAC() string {
	h := RandomHex(3)
	return "52:54:00:" + h[0:2] + ":" + h[2:4] + ":" + h[4:6]
}

// NewUUID returns a random (version 4) UUID.
func NewUUID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
