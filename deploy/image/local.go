package image

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// ErrFileNotAllowed is returned for a local file outside the directories
// the operator allowed ([conductor] file_url_allowed_paths).
var ErrFileNotAllowed = errors.New("local file not allowed")

// ErrTooLarge is returned when a download exceeds its size limit.
var ErrTooLarge = errors.New("download too large")

// LocalPath is the conductor-local path ref names (an absolute path or a
// file:// URL) and whether it names one at all.
func LocalPath(ref string) (string, bool) {
	if filepath.IsAbs(ref) {
		return ref, true
	}
	if u, err := url.Parse(ref); err == nil && u.Scheme == "file" {
		return u.Path, true
	}
	return "", false
}

// CheckLocalPath reports whether path, once symbolic links and .. are
// resolved, lies under one of the allowed directories, and returns it
// resolved. A path that does not exist (yet) is judged as written: it
// cannot be read, and reading it later checks again. The message names
// the path as given, never where a link points.
func CheckLocalPath(path string, allowed []string) (string, error) {
	if len(allowed) == 0 {
		return "", fmt.Errorf("%w: %s is a local file, and no directory is allowed for them ([conductor] file_url_allowed_paths)",
			ErrFileNotAllowed, path)
	}
	resolved := resolve(path)
	for _, dir := range allowed {
		dir = resolve(dir)
		if dir == "/" || resolved == dir || strings.HasPrefix(resolved, dir+string(filepath.Separator)) {
			return resolved, nil
		}
	}
	return "", fmt.Errorf("%w: %s is outside the directories of [conductor] file_url_allowed_paths", ErrFileNotAllowed, path)
}

func resolve(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return filepath.Clean(path)
}

// OpenLocal opens a local file after CheckLocalPath, refusing anything but
// a regular file: a device such as /dev/zero would never end.
func OpenLocal(path string, allowed []string) (*os.File, error) {
	resolved, err := CheckLocalPath(path, allowed)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(resolved)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s does not exist", ErrNotFound, path)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrFileNotAllowed, path)
	}
	return f, nil
}

// LimitedReader reads from R and fails with ErrTooLarge once more than
// Max bytes arrive; Max 0 is no limit.
type LimitedReader struct {
	R   io.Reader
	Max int64
	n   int64
}

func (l *LimitedReader) Read(p []byte) (int, error) {
	if l.Max <= 0 {
		return l.R.Read(p)
	}
	// Reading one byte past the limit tells a body of exactly Max bytes
	// from a longer one.
	if left := l.Max + 1 - l.n; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := l.R.Read(p)
	l.n += int64(n)
	if l.n > l.Max {
		return n, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, l.Max)
	}
	return n, err
}
