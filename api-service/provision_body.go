package apiservice

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/pkg/errs"
)

// A states/provision body may carry a config drive of up to 64 MiB. Read
// whole and decoded, it cost about ten times that in memory, and stored in
// instance_info it slowed every later read of the node. So the body is
// split while it is read: the top-level configdrive string goes, unescaped,
// to a spool (a temporary file, or memory for a small body) and from there
// to the node_configdrives table; the rest of the body, which must fit
// max_request_body_size, is decoded like any other body, with "" standing
// in for the drive.

// driveSpool holds a config drive string while its request is validated.
type driveSpool struct {
	file *os.File
	mem  bytes.Buffer
	w    *bufio.Writer
	size int64
}

const spoolBuffer = 64 << 10

// newDriveSpool keeps the drive in memory when the whole body is known to
// be small, else in an unlinked temporary file, gone with the process.
func newDriveSpool(inMemory bool) (*driveSpool, error) {
	d := &driveSpool{}
	if inMemory {
		d.w = bufio.NewWriterSize(&d.mem, 4<<10)
		return d, nil
	}
	f, err := os.CreateTemp("", "ferric-configdrive-")
	if err != nil {
		return nil, fmt.Errorf("spool config drive: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("spool config drive: %w", err)
	}
	d.file, d.w = f, bufio.NewWriterSize(f, spoolBuffer)
	return d, nil
}

func (d *driveSpool) writeByte(b byte) error {
	d.size++
	return d.w.WriteByte(b)
}

func (d *driveSpool) write(p []byte) error {
	n, err := d.w.Write(p)
	d.size += int64(n)
	return err
}

func (d *driveSpool) writeRune(r rune) error {
	n, err := d.w.WriteRune(r)
	d.size += int64(n)
	return err
}

// reset empties the spool: of duplicate configdrive keys the last counts,
// as with any JSON object.
func (d *driveSpool) reset() error {
	d.size = 0
	if d.file == nil {
		d.mem.Reset()
		d.w.Reset(&d.mem)
		return nil
	}
	d.w.Reset(d.file)
	if err := d.file.Truncate(0); err != nil {
		return fmt.Errorf("spool config drive: %w", err)
	}
	if _, err := d.file.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("spool config drive: %w", err)
	}
	return nil
}

// reader reads the spooled drive from its start.
func (d *driveSpool) reader() (io.Reader, error) {
	if err := d.w.Flush(); err != nil {
		return nil, fmt.Errorf("spool config drive: %w", err)
	}
	if d.file == nil {
		return bytes.NewReader(d.mem.Bytes()), nil
	}
	if _, err := d.file.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("spool config drive: %w", err)
	}
	return bufio.NewReaderSize(d.file, spoolBuffer), nil
}

func (d *driveSpool) close() {
	if d != nil && d.file != nil {
		_ = d.file.Close()
	}
}

// admitLargeBody bounds how many provisioning bodies larger than
// max_request_body_size (or of unknown length) are read at once, and how
// many of them one client sends, and holds each to a minimum rate. The
// caller runs release when done.
func (s *Server) admitLargeBody(c echo.Context) (release func(), err error) {
	r := c.Request()
	if n := r.ContentLength; n >= 0 && n <= s.restLimit() {
		return func() {}, nil
	}
	release, err = s.largeBodies.take(peerHost(r))
	if err != nil {
		return nil, err
	}
	r.Body = newSteadyBody(c.Response(), r, s.cfg.API.ReadTimeout)
	return release, nil
}

// restLimit bounds a body apart from its config drive.
func (s *Server) restLimit() int64 {
	if s.cfg.API.MaxRequestBodySize > 0 {
		return s.cfg.API.MaxRequestBodySize
	}
	return 1 << 20
}

// readProvisionBody reads a states/provision body: the object, and the
// spooled configdrive string (nil when the body gave none, or gave ""). The
// caller closes the spool.
func (s *Server) readProvisionBody(c echo.Context) (map[string]any, *driveSpool, error) {
	limit, _ := c.Get(keyBodyLimit).(int64)
	if limit <= 0 {
		limit = provisionBodyLimit
	}
	r := c.Request()
	drive, err := newDriveSpool(r.ContentLength >= 0 && r.ContentLength <= s.restLimit())
	if err != nil {
		return nil, nil, err
	}
	sp := bodySplitter{in: bufio.NewReaderSize(http.MaxBytesReader(c.Response(), r.Body, limit), spoolBuffer),
		limit: limit, restLimit: s.restLimit(), drive: drive}
	if err := sp.run(); err != nil {
		drive.close()
		return nil, nil, err
	}
	// The rest is a body like any other: same depth and JSON checks.
	r.Body = io.NopCloser(bytes.NewReader(sp.rest.Bytes()))
	body, err := readObject(c, false)
	if err != nil || drive.size == 0 || body["configdrive"] != "" {
		// No drive, or a later configdrive key that was not a string.
		drive.close()
		return body, nil, err
	}
	return body, drive, nil
}

// bodySplitter copies a JSON text to rest, except the string value of the
// top-level key "configdrive", which it unescapes into drive. It follows
// the structure only as far as needed to find that value; whether the
// text is valid JSON is for the decoder of rest to say, and replacing a
// string by "" keeps a valid text valid and an invalid one invalid.
type bodySplitter struct {
	in        *bufio.Reader
	limit     int64
	rest      bytes.Buffer
	restLimit int64
	drive     *driveSpool
	depth     int
	// prev is the last byte outside strings that is not white space; a
	// string after '{' or ',' is a key, after ':' a value.
	prev byte
	// driveKey: the last top-level key read was "configdrive".
	driveKey bool
}

// maxKeyText bounds the raw text of a key compared to "configdrive"
// (11 characters, each at most 6 bytes escaped).
const maxKeyText = 66

// next reads a byte; more is false at the end of the body or on an error,
// which is the client's.
func (b *bodySplitter) next() (c byte, more bool, err error) {
	c, err = b.in.ReadByte()
	switch {
	case err == nil:
		return c, true, nil
	case errors.Is(err, io.EOF):
		return 0, false, nil
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return 0, false, tooLarge(b.limit)
	}
	if errors.Is(err, errSlowBody) {
		return 0, false, errs.New(errs.KindInvalid, "The request body arrived too slowly: a body larger than max_request_body_size must arrive at %d KiB/s or more.",
			largeBodyMinRate>>10).WithStatus(http.StatusRequestTimeout)
	}
	return 0, false, errs.New(errs.KindInvalid, "Could not read the request body")
}

func (b *bodySplitter) run() error {
	for {
		c, more, err := b.next()
		if !more {
			return err
		}
		if c == '"' {
			if err := b.str(); err != nil {
				return err
			}
			continue
		}
		switch c {
		case '{', '[':
			b.depth++
		case '}', ']':
			b.depth--
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			b.prev = c
		}
		if err := b.emit(c); err != nil {
			return err
		}
	}
}

func (b *bodySplitter) emit(c byte) error {
	if int64(b.rest.Len()) >= b.restLimit {
		return tooLarge(b.restLimit)
	}
	return b.rest.WriteByte(c)
}

// str handles a string whose opening quote was just read.
func (b *bodySplitter) str() error {
	topLevel := b.depth == 1
	isKey := topLevel && (b.prev == '{' || b.prev == ',')
	divert := topLevel && b.prev == ':' && b.driveKey
	b.prev = '"'
	if divert {
		for _, c := range []byte(`""`) {
			if err := b.emit(c); err != nil {
				return err
			}
		}
		return b.divert()
	}
	if err := b.emit('"'); err != nil {
		return err
	}
	var key []byte
	escaped := false
	for {
		c, more, err := b.next()
		if !more {
			// Unterminated at the end: the decoder of rest reports it.
			return err
		}
		if err := b.emit(c); err != nil {
			return err
		}
		if !escaped && c == '"' {
			break
		}
		escaped = !escaped && c == '\\'
		if isKey && len(key) <= maxKeyText {
			key = append(key, c)
		}
	}
	if isKey {
		var name string
		b.driveKey = len(key) <= maxKeyText && json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &name) == nil &&
			name == "configdrive"
	}
	return nil
}

func badString(why string) error {
	return errs.New(errs.KindInvalid, "Invalid JSON in request body: %s in the configdrive string", why)
}

// divert unescapes the configdrive string, whose opening quote was just
// read, into the spool.
func (b *bodySplitter) divert() error {
	if err := b.drive.reset(); err != nil {
		return err
	}
	for {
		if err := b.copyPlain(); err != nil {
			return err
		}
		c, more, err := b.next()
		if !more {
			return err
		}
		switch {
		case c == '"':
			return nil
		case c < 0x20:
			return badString("invalid character " + strconv.QuoteRune(rune(c)))
		case c != '\\':
			err = b.drive.writeByte(c)
		default:
			err = b.escape()
		}
		if err != nil {
			return err
		}
	}
}

// copyPlain copies the buffered bytes up to the next quote, backslash or
// control character to the spool in one write: a drive is megabytes of
// base64 with nothing to unescape.
func (b *bodySplitter) copyPlain() error {
	buf, _ := b.in.Peek(b.in.Buffered())
	i := 0
	for i < len(buf) && buf[i] != '"' && buf[i] != '\\' && buf[i] >= 0x20 {
		i++
	}
	if i == 0 {
		return nil
	}
	if err := b.drive.write(buf[:i]); err != nil {
		return err
	}
	_, err := b.in.Discard(i)
	return err
}

var simpleEscapes = map[byte]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// escape decodes the escape sequence after a backslash, as encoding/json
// does: a lone surrogate becomes U+FFFD.
func (b *bodySplitter) escape() error {
	c, err := b.escapeByte()
	if err != nil {
		return err
	}
	if s, ok := simpleEscapes[c]; ok {
		return b.drive.writeByte(s)
	}
	if c != 'u' {
		return badString("invalid escape " + strconv.QuoteRune(rune(c)))
	}
	r, err := b.hex4()
	if err != nil {
		return err
	}
	if utf16.IsSurrogate(r) {
		next, perr := b.in.Peek(6)
		if perr == nil && next[0] == '\\' && next[1] == 'u' {
			if low, herr := strconv.ParseUint(string(next[2:]), 16, 16); herr == nil {
				if pair := utf16.DecodeRune(r, rune(low)); pair != utf8.RuneError {
					_, _ = b.in.Discard(6)
					return b.drive.writeRune(pair)
				}
			}
		}
		r = utf8.RuneError
	}
	return b.drive.writeRune(r)
}

func (b *bodySplitter) escapeByte() (byte, error) {
	c, more, err := b.next()
	if !more && err == nil {
		return 0, badString("unterminated escape")
	}
	return c, err
}

func (b *bodySplitter) hex4() (rune, error) {
	var digits [4]byte
	for i := range digits {
		c, err := b.escapeByte()
		if err != nil {
			return 0, err
		}
		digits[i] = c
	}
	v, err := strconv.ParseUint(string(digits[:]), 16, 16)
	if err != nil {
		return 0, badString("invalid escape")
	}
	return rune(v), nil
}
