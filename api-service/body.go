package apiservice

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/pkg/errs"
)

// readBody reads the request body up to the limit chosen for the route.
func readBody(c echo.Context) ([]byte, error) {
	limit, _ := c.Get(keyBodyLimit).(int64)
	if limit <= 0 {
		limit = 1 << 20
	}
	r := c.Request()
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 && n <= limit {
		// One allocation of the declared size: growing by doubling kept
		// up to twice the body alive at once.
		buf.Grow(int(n) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(c.Response(), r.Body, limit))
	raw := buf.Bytes()
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, tooLarge(limit)
	}
	if err != nil {
		return nil, errs.New(errs.KindInvalid, "Could not read the request body")
	}
	depth, elements, number := scanJSON(raw)
	if depth > maxNesting {
		return nil, &flatError{code: http.StatusBadRequest,
			message: fmt.Sprintf("JSON body is nested too deeply (%d levels, at most %d are allowed).", depth, maxNesting)}
	}
	if elements > maxElements {
		return nil, errs.New(errs.KindInvalid, "The JSON body has more than %d values; at most %d are allowed.", maxElements, maxElements)
	}
	if number != "" {
		if len(number) > 40 {
			number = number[:40] + "..."
		}
		return nil, errs.New(errs.KindInvalid, "Invalid JSON in request body: the number %s is out of range", number)
	}
	return raw, nil
}

// maxNesting bounds how deeply a body may nest objects and lists, so a
// hostile body cannot make decoding and patching recurse without end.
const maxNesting = 25

// maxElements bounds the values (members and list items) of a body. Each
// decoded value costs tens of bytes of Go memory whatever its text: a
// 1 MiB list of zeros became 40 MiB. A node's documents hold a few
// hundred.
const maxElements = 10000

// scanJSON returns the deepest object/list nesting of a JSON text, how
// many values its objects and lists hold (counted by their separators, so
// at most one too many a container), and the first number in it that a
// float64 cannot hold (1e400 is valid JSON but
// overflows: stored, it would make the record unreadable to every JSON
// decoder reading it as a float). Strings are skipped, the rest is not
// validated: the decoder judges the syntax.
func scanJSON(raw []byte) (deepest, elements int, outOfRange string) {
	depth := 0
	inString, escaped := false, false
	for i := 0; i < len(raw); i++ {
		b := raw[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			depth++
			deepest = max(deepest, depth)
			elements++
		case b == ',':
			elements++
		case b == '}' || b == ']':
			depth--
		case outOfRange == "" && (b == '-' || (b >= '0' && b <= '9')):
			end := i + 1
			for end < len(raw) && strings.IndexByte("0123456789+-.eE", raw[end]) >= 0 {
				end++
			}
			if _, err := strconv.ParseFloat(string(raw[i:end]), 64); errors.Is(err, strconv.ErrRange) {
				outOfRange = string(raw[i:end])
			}
			i = end - 1
		}
	}
	return deepest, elements, outOfRange
}

// decodeJSON parses a JSON document keeping numbers exact.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, errs.New(errs.KindInvalid, "Invalid JSON in request body: %s", err.Error())
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errs.New(errs.KindInvalid, "Invalid JSON in request body: unexpected data after the document")
	}
	return v, nil
}

// decoding bounds the bodies decoded at once, each a burst of allocation
// up to several times its size: past the cores' worth, more at once only
// raises the peak heap, not the throughput.
var decoding = make(chan struct{}, 2*runtime.GOMAXPROCS(0))

// readObject reads a body that must be a JSON object. An empty body is an
// empty object when allowEmpty.
func readObject(c echo.Context, allowEmpty bool) (map[string]any, error) {
	raw, err := readObjectText(c, allowEmpty)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return map[string]any{}, nil
	}
	decoding <- struct{}{}
	v, err := decodeJSON(raw)
	<-decoding
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errs.New(errs.KindInvalid, "The request body must be a JSON object")
	}
	return obj, nil
}

// readFields reads a body that must be a JSON object, keeping each
// member's value as its JSON text: a route that takes a few typed fields
// decodes only those, so whatever else a client nests in the body never
// becomes Go values (a 64 KiB body of empty objects decoded whole was
// megabytes of maps). An empty body has no fields when allowEmpty.
func readFields(c echo.Context, allowEmpty bool) (map[string]json.RawMessage, error) {
	raw, err := readObjectText(c, allowEmpty)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return map[string]json.RawMessage{}, nil
	}
	decoding <- struct{}{}
	defer func() { <-decoding }()
	return decodeFields(raw)
}

// readObjectText reads a body that must hold a JSON object: nil for an
// empty body when allowEmpty, an error when it is empty otherwise.
func readObjectText(c echo.Context, allowEmpty bool) ([]byte, error) {
	raw, err := readBody(c)
	switch {
	case err != nil:
		return nil, err
	case len(bytes.TrimSpace(raw)) > 0:
		return raw, nil
	case allowEmpty:
		return nil, nil
	}
	return nil, errs.New(errs.KindInvalid, "The request body is empty; a JSON object is required")
}

// decodeFields parses a JSON object into its members' JSON texts.
func decodeFields(raw []byte) (map[string]json.RawMessage, error) {
	var fields map[string]json.RawMessage
	err := json.Unmarshal(raw, &fields)
	var notObject *json.UnmarshalTypeError
	switch {
	case errors.As(err, &notObject), err == nil && fields == nil:
		return nil, errs.New(errs.KindInvalid, "The request body must be a JSON object")
	case err != nil:
		return nil, errs.New(errs.KindInvalid, "Invalid JSON in request body: %s", err.Error())
	}
	return fields, nil
}

// stringField is the string member key of fields, "" when absent or null.
func stringField(fields map[string]json.RawMessage, key string) (string, error) {
	raw, ok := fields[key]
	if !ok {
		return "", nil
	}
	var s *string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errs.InvalidParameterValue("Invalid %s: expected a string", key)
	}
	if s == nil {
		return "", nil
	}
	return *s, nil
}
