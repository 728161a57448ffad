package pxe

import (
	"bytes"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
)

// Boot files and their directories are not world-readable: a deploy
// ramdisk's command line and a node's configuration are nobody else's
// business. The TFTP server (and a web server serving the HTTP root, if
// not the conductor's own) reads them through the group: the operator
// gives the roots that group and the set-group-ID bit, which new files
// and directories inherit (see README, "Boot files").
const (
	fileMode os.FileMode = 0o640
	dirMode  os.FileMode = 0o750
)

// writeFileAtomic replaces path with data so a booting node never reads a
// half-written file.
func writeFileAtomic(path string, data []byte) error {
	return writeStreamAtomic(path, bytes.NewReader(data))
}

// writeStreamAtomic copies r into a temporary file next to path, then
// renames it over path. Nothing is left behind when r fails.
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
	if err := tmp.Chmod(fileMode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// filesOnly is the HTTP root as the boot file server shows it: files, and
// no directories, whose listings would name every node (their UUIDs) and
// hand out their iPXE configurations to whoever asks.
type filesOnly struct{ http.FileSystem }

func (f filesOnly) Open(name string) (http.File, error) {
	file, err := f.FileSystem.Open(name)
	if err != nil {
		return nil, err
	}
	info, err := file.Stat()
	if err == nil && info.IsDir() {
		err = fs.ErrNotExist
	}
	if err != nil {
		file.Close()
		return nil, err
	}
	return file, nil
}
