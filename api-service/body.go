package apiservice

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
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
	raw, err := io.ReadAll(http.MaxBytesReader(c.Response(), r.Body, limit))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, tooLarge(limit)
	}
	if err != nil {
		return nil, errs.New(errs.KindInvalid, "Could not read the request body")
	}
	depth, number := scanJSON(raw)
	if depth > maxNesting {
		return nil, &flatError{code: http.StatusBadRequest,
			message: fmt.Sprintf("JSON body is nested too deeply (%d levels, at most %d are allowed).", depth, maxNesting)}
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

// scanJSON returns the deepest object/list nesting of a JSON text and the
// first number in it that a float64 cannot hold (1e400 is valid JSON but
// overflows: stored, it would make the record unreadable to every JSON
// decoder reading it as a float). Strings are skipped, the rest is not
// validated: the decoder judges the syntax.
func scanJSON(raw []byte) (deepest int, outOfRange string) {
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
	return deepest, outOfRange
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

// readObject reads a body that must be a JSON object. An empty body is an
// empty object when allowEmpty.
func readObject(c echo.Context, allowEmpty bool) (map[string]any, error) {
	raw, err := readBody(c)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		if allowEmpty {
			return map[string]any{}, nil
		}
		return nil, errs.New(errs.KindInvalid, "The request body is empty; a JSON object is required")
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errs.New(errs.KindInvalid, "The request body must be a JSON object")
	}
	return obj, nil
}

// onlyKeys refuses body keys outside allowed.
func onlyKeys(body map[string]any, allowed ...string) error {
	var bad []string
	for k := range body {
		if !slices.Contains(allowed, k) {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return errs.New(errs.KindInvalid, "Unexpected arguments: %s", strings.Join(bad, ", "))
	}
	return nil
}
