package floppy_test

import (
	"bytes"
	"testing"

	"github.com/ferricbm/ferric/deploy/floppy"
)

// BenchmarkParameters builds a deploy's parameter floppy, as the conductor
// does on every virtual-media deploy and clean.
func BenchmarkParameters(b *testing.B) {
	b.SetBytes(floppy.FloppySize)
	for b.Loop() {
		if _, err := floppy.Parameters(params); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadParameters opens a floppy and reads parameters.txt, as the
// ramdisk does once at boot.
func BenchmarkReadParameters(b *testing.B) {
	img, err := floppy.Parameters(params)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		fs, err := floppy.Open(bytes.NewReader(img))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := fs.ReadFile(floppy.ParametersFile); err != nil {
			b.Fatal(err)
		}
	}
}
