package events_test

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/resource/events"
)

func TestEvents(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "events")
}

const (
	port   = "a1b2c3d4-e5f6-4711-8899-aabbccddeeff"
	device = "0d5f3a2b-6c7e-4f80-91a2-b3c4d5e6f708"
)

func body(s string) map[string]any {
	var m map[string]any
	Expect(json.Unmarshal([]byte(s), &m)).To(Succeed())
	return m
}

var _ = Describe("Decode", func() {
	It("takes Neutron's port events, normalising the MAC", func() {
		got, err := events.Decode(body(`{"events": [
			{"event": "network.bind_port", "port_id": "` + port + `", "mac_address": "52:54:00:AA:BB:CC", "status": "ACTIVE",
			 "device_id": "` + device + `", "binding:host_id": "` + device + `", "binding:vnic_type": "baremetal"},
			{"event": "network.delete_port", "port_id": "` + port + `", "mac_address": "52:54:00:aa:bb:cc", "status": "DOWN", "device_id": null}]}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(HaveLen(2))
		Expect(got[0]).To(Equal(events.Event{Event: "network.bind_port", PortID: port, MACAddress: "52:54:00:aa:bb:cc", Status: "ACTIVE",
			DeviceID: ptr(device), HostID: ptr(device), VNICType: ptr("baremetal")}))
		Expect(got[1]).To(Equal(events.Event{Event: "network.delete_port", PortID: port, MACAddress: "52:54:00:aa:bb:cc", Status: "DOWN"}))
	})

	event := func(more string) string {
		return `{"events": [{"event": "network.unbind_port", "port_id": "` + port + `", "mac_address": "52:54:00:aa:bb:cc", "status": "DOWN"` + more + `}]}`
	}
	DescribeTable("refuses, with a 400 naming the mistake",
		func(raw, msg string) {
			_, err := events.Decode(body(raw))
			Expect(errs.Status(err)).To(Equal(400))
			Expect(errs.Message(err)).To(ContainSubstring(msg))
		},
		Entry("no events", `{}`, "'events' is a required property"),
		Entry("an empty list", `{"events": []}`, "[] is too short"),
		Entry("events not a list", `{"events": {}}`, "is not of type 'array'"),
		Entry("another key", `{"events": [], "x": 1}`, "Unexpected arguments: x"),
		Entry("an event not an object", `{"events": [1]}`, "is not of type 'object'"),
		Entry("an unknown event", `{"events": [{"event": "compute.reboot"}]}`, "'compute.reboot' is not one of"),
		Entry("an event without its kind", `{"events": [{"port_id": "`+port+`"}]}`, "'event' is a required property"),
		Entry("a missing status", `{"events": [{"event": "network.bind_port", "port_id": "`+port+`", "mac_address": "52:54:00:aa:bb:cc"}]}`,
			"'status' is a required property"),
		Entry("a port id that is no UUID", `{"events": [{"event": "network.bind_port", "port_id": "p1", "mac_address": "52:54:00:aa:bb:cc", "status": "x"}]}`,
			"Expected a UUID for port_id but received p1."),
		Entry("a bad MAC", `{"events": [{"event": "network.bind_port", "port_id": "`+port+`", "mac_address": "zz", "status": "x"}]}`,
			"Expected a MAC address but received zz."),
		Entry("a device id that is no UUID", event(`, "device_id": "vm-1"`), "Expected a UUID for device_id"),
		Entry("a host that is no UUID", event(`, "binding:host_id": "compute-1"`), "Expected a UUID for binding:host_id"),
		Entry("a vnic type of another type", event(`, "binding:vnic_type": 5`), "is not of type 'string'"),
		Entry("an unknown event field", event(`, "network_id": "n"`), "Unexpected arguments: network_id"),
	)

	It("bounds the number of events in one request", func() {
		one := `{"event": "network.bind_port", "port_id": "` + port + `", "mac_address": "52:54:00:aa:bb:cc", "status": "x"}`
		many := `{"events": [` + one
		for range 1000 {
			many += ", " + one
		}
		_, err := events.Decode(body(many + `]}`))
		Expect(errs.Status(err)).To(Equal(400))
	})
})

func ptr(s string) *string { return &s }
