package redfish

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("reading a Redfish error body", func() {
	It("joins the extended messages and hides a quoted password", func() {
		c, err := New(Config{Address: "bmc.example", Username: "admin", Password: "Tr0ub4dor"})
		Expect(err).NotTo(HaveOccurred())
		body := []byte(`{"error": {"code": "Base.1.8.GeneralError", "message": "See ExtendedInfo",
			"@Message.ExtendedInfo": [{"Message": "The value Tr0ub4dor for the property Password is not valid."},
			{"Message": "Try again."}]}}`)
		Expect(c.scrub(errorMessage(body))).To(Equal("The value ****** for the property Password is not valid.; Try again."))
	})

	It("falls back to the error's message, and to nothing for a body that is not Redfish's", func() {
		Expect(errorMessage([]byte(`{"error": {"message": "Busy"}}`))).To(Equal("Busy"))
		Expect(errorMessage([]byte(`<html>`))).To(BeEmpty())
	})
})
