// Package events decodes the external events other services post to
// /v1/events (1.54): today Neutron's port events, which tell that a
// port was bound, unbound or deleted.
package events

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/resource/catalogue"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
)

// Since is when POST /v1/events appeared.
var Since = microversion.V1(54)

// Kinds are the events accepted, all network events with the same fields.
var Kinds = []string{"network.bind_port", "network.unbind_port", "network.delete_port"}

// Event is one network event.
type Event struct {
	Event      string  `json:"event"`
	PortID     string  `json:"port_id"`
	MACAddress string  `json:"mac_address"`
	Status     string  `json:"status"`
	DeviceID   *string `json:"device_id"`
	HostID     *string `json:"binding:host_id"`
	VNICType   *string `json:"binding:vnic_type"`
}

// maxEvents bounds one request: Neutron posts the events of a port
// update, a handful at a time.
const maxEvents = 1000

// Decode checks a request body as Ironic's schema does and returns its
// events, in order.
func Decode(body map[string]any) ([]Event, error) {
	if err := errs.OnlyKeys(body, "events"); err != nil {
		return nil, err
	}
	raw, ok := body["events"]
	if !ok {
		return nil, schemaError("'events' is a required property")
	}
	items, ok := raw.([]any)
	if !ok {
		return nil, catalogue.TypeError("events", "events", raw, "array")
	}
	if len(items) == 0 {
		return nil, schemaError("[] is too short")
	}
	if len(items) > maxEvents {
		return nil, schemaError(fmt.Sprintf("at most %d events are accepted at once", maxEvents))
	}
	out := make([]Event, 0, len(items))
	for _, it := range items {
		e, err := decodeEvent(it)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func decodeEvent(raw any) (Event, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		return Event{}, catalogue.TypeError("events", "event", raw, "object")
	}
	kind, ok := m["event"].(string)
	if !ok {
		if _, present := m["event"]; !present {
			return Event{}, schemaError("'event' is a required property")
		}
		return Event{}, catalogue.TypeError("events", "event", m["event"], "string")
	}
	if !slices.Contains(Kinds, kind) {
		return Event{}, schemaError(fmt.Sprintf("'%s' is not one of ['%s']", kind, strings.Join(Kinds, "', '")))
	}
	e := Event{Event: kind}
	fields := []struct {
		key      string
		required bool
		check    func(string) (string, error)
		set      func(string)
	}{
		{"port_id", true, catalogue.UUID("port_id"), func(v string) { e.PortID = v }},
		{"mac_address", true, catalogue.MAC, func(v string) { e.MACAddress = v }},
		{"status", true, nil, func(v string) { e.Status = v }},
		{"device_id", false, catalogue.UUID("device_id"), func(v string) { e.DeviceID = &v }},
		{"binding:host_id", false, catalogue.UUID("binding:host_id"), func(v string) { e.HostID = &v }},
		{"binding:vnic_type", false, nil, func(v string) { e.VNICType = &v }},
	}
	known := []string{"event"}
	for _, f := range fields {
		known = append(known, f.key)
	}
	if err := errs.OnlyKeys(m, known...); err != nil {
		return Event{}, err
	}
	for _, f := range fields {
		s, err := text(m, f.key, f.required)
		if err != nil {
			return Event{}, err
		}
		if s == nil {
			continue
		}
		v := *s
		if f.check != nil {
			if v, err = f.check(v); err != nil {
				return Event{}, err
			}
		}
		f.set(v)
	}
	return e, nil
}

// text is m[key] as a string: nil when absent or null and not required.
func text(m map[string]any, key string, required bool) (*string, error) {
	v, present := m[key]
	if !present || v == nil {
		if required {
			return nil, schemaError(fmt.Sprintf("'%s' is a required property", key))
		}
		return nil, nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, catalogue.TypeError("events", key, v, "string")
	}
	return &s, nil
}

func schemaError(detail string) error {
	return errs.New(errs.KindInvalid, "Schema error for events: %s", detail)
}
