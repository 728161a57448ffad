package apiservice

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"

	"github.com/labstack/echo/v4"
)

// jsonBuffers recycles the buffers documents are encoded into for
// sendJSON: a page of 100 nodes is a quarter of a megabyte, which
// allocated and zeroed for every request drives most of the garbage
// collector's work.
var jsonBuffers sync.Pool

// maxPooledBuffer keeps a rare huge page from being held on to.
const maxPooledBuffer = 4 << 20

// jsonBuffer returns an empty buffer with room for size bytes, to encode
// a document into and hand to sendJSON.
func jsonBuffer(size int) []byte {
	if b, ok := jsonBuffers.Get().(*[]byte); ok && cap(*b) >= size {
		return (*b)[:0]
	}
	return make([]byte, 0, size)
}

// sendJSON writes an already encoded (compact) JSON document as c.JSON
// would write the value it encodes: with a trailing newline, and indented
// when the client asked for ?pretty. The length is known, so the body is
// not chunked. doc belongs to sendJSON afterwards and is recycled.
func sendJSON(c echo.Context, status int, doc []byte) error {
	doc = append(doc, '\n')
	out := doc
	if _, pretty := c.QueryParams()["pretty"]; pretty || c.Echo().Debug {
		var indented bytes.Buffer
		if err := json.Indent(&indented, doc, "", "  "); err != nil {
			return err
		}
		out = indented.Bytes()
	}
	c.Response().Header().Set(echo.HeaderContentLength, strconv.Itoa(len(out)))
	err := c.JSONBlob(status, out)
	if cap(doc) <= maxPooledBuffer {
		jsonBuffers.Put(&doc)
	}
	return err
}
