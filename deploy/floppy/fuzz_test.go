package floppy

import (
	"bytes"
	"testing"
)

// FuzzRead reads hostile FAT images, as a ramdisk may find on a device that
// claims to be the floppy: errors are fine, panics are not.
func FuzzRead(f *testing.F) {
	seed, err := Image{Label: Label, Size: 64 * sectorSize, Files: []File{
		{Name: ParametersFile, Data: []byte("a=b")},
		{Name: "sub/a long name.txt", Data: bytes.Repeat([]byte("x"), 1500)},
	}}.Build()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		fs, err := Open(bytes.NewReader(data))
		if err != nil {
			return
		}
		_, _ = fs.Label()
		_, _ = fs.ReadFile(ParametersFile)
		_, _ = fs.ReadFile("sub/a long name.txt")
		_, _ = fs.ReadDir("sub")
	})
}
