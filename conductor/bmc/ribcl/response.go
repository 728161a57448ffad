package ribcl

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
)

// Element is one XML element of an answer, kept generic because the iLO
// spells attribute names in either case (VALUE and value) across commands
// and firmware versions.
type Element struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Children []Element  `xml:",any"`
}

// Attr is the value of the attribute named name in any case, "" if absent.
func (e *Element) Attr(name string) string {
	for _, a := range e.Attrs {
		if strings.EqualFold(a.Name.Local, name) {
			return a.Value
		}
	}
	return ""
}

// Child is the first child element named name, or nil.
func (e *Element) Child(name string) *Element {
	for i := range e.Children {
		if e.Children[i].XMLName.Local == name {
			return &e.Children[i]
		}
	}
	return nil
}

type document struct {
	Response *struct {
		Status  string `xml:"STATUS,attr"`
		Message string `xml:"MESSAGE,attr"`
	} `xml:"RESPONSE"`
	Elements []Element `xml:",any"`
}

// Status codes and messages that mean the credentials were refused.
const (
	statusLoginNotFound = 0x005F
	statusLoginFailed   = 0x000A
	noError             = "No error"
)

var loginMessages = []string{"User login name was not found", "Login failed", "Login credentials rejected"}

// parseResponse reads the iLO's answer: one XML document per element it
// processed, concatenated. Any non-zero status fails the call; the first
// element that is not a RESPONSE is the data.
func parseResponse(op string, body []byte) (*Element, error) {
	var data *Element
	var note string
	parts := bytes.Split(body, []byte("<?xml"))
	for n, part := range parts {
		// Every part after the first starts with the rest of an XML
		// declaration, which on its own is not XML.
		if n > 0 {
			if i := bytes.Index(part, []byte("?>")); i >= 0 {
				part = part[i+2:]
			}
		}
		part = bytes.TrimSpace(part)
		if len(part) == 0 {
			continue
		}
		var d document
		if err := xml.Unmarshal(part, &d); err != nil {
			return nil, fmt.Errorf("iLO %s: unreadable answer: %w", op, err)
		}
		if d.Response != nil {
			code, err := parseStatus(d.Response.Status)
			if err != nil {
				return nil, fmt.Errorf("iLO %s: %w", op, err)
			}
			if code != 0 {
				return nil, statusError(op, code, d.Response.Message)
			}
			if d.Response.Message != "" && d.Response.Message != noError {
				note = d.Response.Message
			}
		}
		if data == nil && len(d.Elements) > 0 {
			data = &d.Elements[0]
		}
	}
	if data == nil && note != "" {
		// A zero status with another message is the iLO's answer itself.
		data = &Element{XMLName: xml.Name{Local: "MESSAGE"}, Attrs: []xml.Attr{{Name: xml.Name{Local: "VALUE"}, Value: note}}}
	}
	return data, nil
}

func parseStatus(s string) (int, error) {
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X"), 16, 32)
	if err != nil {
		return 0, fmt.Errorf("unreadable status %q", s)
	}
	return int(v), nil
}

func statusError(op string, code int, msg string) error {
	e := &StatusError{Op: op, Code: code, Message: msg}
	switch {
	case code == statusLoginNotFound || code == statusLoginFailed || hasAny(msg, loginMessages):
		e.kind = ErrLogin
	case isBootModeOp(op) && hasAny(strings.ToLower(msg), []string{"syntax error", "feature not supported"}):
		e.kind = ErrNotSupported
	}
	return e
}

func hasAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func isBootModeOp(op string) bool { return strings.Contains(op, "boot mode") }

// escape makes s safe inside a double-quoted XML attribute: temp URLs
// carry '&', and passwords may carry anything.
func escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
