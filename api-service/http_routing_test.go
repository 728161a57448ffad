package apiservice_test

import (
	"context"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("a node no conductor serves", func() {
	var (
		e    *env
		uuid string
	)

	BeforeEach(func() {
		e, uuid = sqliteEnvWithNode("")
		ctx := context.Background()
		n, err := e.store.GetNode(ctx, uuid)
		Expect(err).NotTo(HaveOccurred())
		n.ConductorGroup = "nowhere"
		Expect(e.store.SaveNode(ctx, n)).To(Succeed())
	})

	noHost := `No conductor service registered which supports driver fake-hardware for conductor group "nowhere".`

	DescribeTable("answers as Ironic does on each route",
		func(method, path, body string, status int) {
			r := e.at("latest", method, "/v1/nodes/"+uuid+path, body)
			Expect(r.status).To(Equal(status), string(r.raw))
			Expect(r.fault()["faultstring"]).To(Equal(noHost))
		},
		Entry("maintenance", http.MethodPut, "/maintenance", `{"reason": "x"}`, http.StatusBadRequest),
		Entry("node deletion", http.MethodDelete, "", "", http.StatusBadRequest),
		Entry("VIF list", http.MethodGet, "/vifs", "", http.StatusBadRequest),
		Entry("power action", http.MethodPut, "/states/power", `{"target": "power on"}`, http.StatusNotFound),
		Entry("provision action", http.MethodPut, "/states/provision", `{"target": "manage"}`, http.StatusNotFound),
		Entry("validation", http.MethodGet, "/validate", "", http.StatusNotFound),
		Entry("boot device", http.MethodGet, "/management/boot_device", "", http.StatusNotFound),
	)
})
