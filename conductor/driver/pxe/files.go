package pxe

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
)

// writeFileAtomic replaces path with data so a booting node never reads a
// half-written file.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	if err := writeStreamAtomic(path, bytes.NewReader(data)); err != nil {
		return err
	}
	return os.Chmod(path, perm)
}

// writeStreamAtomic copies r into a temporary file next to path, then
// renames it over path.
func writeStreamAtomic(path string, r io.Reader) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, r); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
