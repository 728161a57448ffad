package bootiso

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// CacheKey is what a partition image's generated boot ISO depends on: the
// image and its kernel and ramdisk, and the root UUID the deploy gave the root
// filesystem, which the kernel command line embeds (so two deployments share an
// ISO only when their root UUIDs match). AppendParams is the configured kernel
// append line, also part of the ISO.
type CacheKey struct {
	ImageID, KernelID, RamdiskID, RootUUID, AppendParams string
}

// Name is the object or file name of the boot ISO for k: "boot-iso-" and 40
// hex digits of a SHA-256 over the fields.
func (k CacheKey) Name() string {
	h := sha256.Sum256([]byte(strings.Join([]string{k.ImageID, k.KernelID, k.RamdiskID, k.RootUUID, k.AppendParams}, "\x00")))
	return "boot-iso-" + hex.EncodeToString(h[:20])
}
