package apiservice_test

import (
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/sirupsen/logrus"
)

var _ = Describe("external events (1.54)", func() {
	const bind = `{"events": [{"event": "network.bind_port", "port_id": "a1b2c3d4-e5f6-4711-8899-aabbccddeeff",
		"mac_address": "52:54:00:AA:BB:CC", "status": "ACTIVE", "binding:vnic_type": "baremetal"}]}`

	It("accepts Neutron's port events with 204 and logs each", func() {
		e := sqliteEnv(nil)
		r := e.at("1.54", http.MethodPost, "/v1/events", bind)
		Expect(r.status).To(Equal(http.StatusNoContent))
		Expect(r.raw).To(BeEmpty())
		Expect(e.logs.AllEntries()).To(ContainElement(And(
			HaveField("Message", "Received external event"),
			HaveField("Level", logrus.DebugLevel),
			HaveField("Data", And(HaveKeyWithValue("event", "network.bind_port"), HaveKeyWithValue("mac_address", "52:54:00:aa:bb:cc"))))))
	})

	It("is hidden below 1.54, refuses bad events with 400 and other methods with 405", func() {
		e := sqliteEnv(nil)
		Expect(e.at("1.53", http.MethodPost, "/v1/events", bind).status).To(Equal(http.StatusNotFound))
		r := e.at("1.54", http.MethodPost, "/v1/events", `{"events": [{"event": "network.bind_port", "port_id": "p1"}]}`)
		Expect(r.status).To(Equal(http.StatusBadRequest))
		Expect(r.fault()["faultstring"]).To(ContainSubstring("port_id"))
		Expect(e.at("1.54", http.MethodPost, "/v1/events", `{"events": []}`).status).To(Equal(http.StatusBadRequest))
		Expect(e.at("1.54", http.MethodGet, "/v1/events", "").status).To(Equal(http.StatusMethodNotAllowed))
		Expect(e.at("1.54", http.MethodGet, "/v1", "").json()).To(HaveKey("events"))
		Expect(e.at("1.53", http.MethodGet, "/v1", "").json()).NotTo(HaveKey("events"))
	})
})
