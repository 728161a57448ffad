package cli_test

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/client/fakeironic"
)

const (
	node1 = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"
	node2 = "5d8e7d2e-6c2f-4c7c-8fd8-0b8e3b0d4a11"
)

func shortNode(uuid, name, state string) string {
	return `{"uuid": "` + uuid + `", "name": "` + name + `", "instance_uuid": null, "power_state": "power off",
		"provision_state": "` + state + `", "maintenance": false, "links": []}`
}

const fullNode = `{"uuid": "1be26c0b-03f2-4d2e-ae87-c02d7f33c123", "name": "node-07", "driver": "ipmi",
	"driver_info": {"ipmi_address": "192.0.2.7", "ipmi_password": "******"}, "power_state": "power off",
	"provision_state": "enroll", "maintenance": false, "created_at": "2026-05-01T10:00:00+00:00", "updated_at": null,
	"links": [{"href": "{url}/v1/nodes/1be26c0b-03f2-4d2e-ae87-c02d7f33c123", "rel": "self"}],
	"ports": [], "states": [], "volume": []}`

var _ = Describe("node commands", func() {
	var fake *fakeironic.Server
	BeforeEach(func() {
		fake = startFake("1.80")
	})

	It("list filters, and follows pages keeping the filters", func(ctx SpecContext) {
		fake.Handle("GET", "/v1/nodes", fakeironic.Response{Status: http.StatusOK, Body: `{"nodes": [` + shortNode(node1, "n1", "manageable") +
			`], "next": "http://192.0.2.10:6385/v1/nodes?limit=1&sort_key=id&sort_dir=asc&marker=` + node1 + `"}`})
		fake.Handle("GET", "/v1/nodes", fakeironic.Response{Status: http.StatusOK, Body: `{"nodes": [` + shortNode(node2, "n2", "manageable") + `]}`})
		r := ferricctl(ctx, fake, nil, "node", "list", "--provision-state", "manageable", "--driver", "ipmi", "--maintenance", "--limit", "0")
		expectOK(r)
		reqs := apiRequests(fake)
		Expect(reqs).To(HaveLen(2))
		Expect(reqs[0].Query).To(Equal(url.Values{"provision_state": {"manageable"}, "driver": {"ipmi"}, "maintenance": {"true"}}))
		Expect(reqs[1].Query).To(Equal(url.Values{"provision_state": {"manageable"}, "driver": {"ipmi"}, "maintenance": {"true"}, "marker": {node1}}))
		Expect(reqs[0].Header.Get("X-OpenStack-Ironic-API-Version")).To(Equal("1.80"))
		Expect(r.stdout).To(Equal(
			"+--------------------------------------+------+---------------+-------------+--------------------+-------------+\n" +
				"| UUID                                 | Name | Instance UUID | Power State | Provisioning State | Maintenance |\n" +
				"+--------------------------------------+------+---------------+-------------+--------------------+-------------+\n" +
				"| 1be26c0b-03f2-4d2e-ae87-c02d7f33c123 | n1   | None          | power off   | manageable         | False       |\n" +
				"| 5d8e7d2e-6c2f-4c7c-8fd8-0b8e3b0d4a11 | n2   | None          | power off   | manageable         | False       |\n" +
				"+--------------------------------------+------+---------------+-------------+--------------------+-------------+\n"))
	})

	It("list --long uses the detail endpoint and shows every data field", func(ctx SpecContext) {
		fake.Handle("GET", "/v1/nodes/detail", fakeironic.Response{Status: http.StatusOK, Body: `{"nodes": [` + fullNode + `]}`})
		r := ferricctl(ctx, fake, nil, "-f", "json", "node", "list", "--long")
		expectOK(r)
		Expect(r.stdout).To(MatchJSON(`[{"Created At": "2026-05-01T10:00:00+00:00", "Driver": "ipmi",
			"Driver Info": {"ipmi_address": "192.0.2.7", "ipmi_password": "******"}, "Maintenance": false, "Name": "node-07",
			"Power State": "power off", "Provisioning State": "enroll", "Updated At": null, "UUID": "` + node1 + `"}]`))
	})

	It("show prints the node as the API returned it, without links", func(ctx SpecContext) {
		fake.Handle("GET", "/v1/nodes/node-07", fakeironic.Response{Status: http.StatusOK, Body: fullNode})
		r := ferricctl(ctx, fake, nil, "-f", "yaml", "node", "show", "node-07", "--fields", "name,driver_info")
		expectOK(r)
		Expect(r.stdout).To(Equal("driver_info:\n  ipmi_address: 192.0.2.7\n  ipmi_password: '******'\nname: node-07\n"))
	})

	It("create sends the node and shows it", func(ctx SpecContext) {
		fake.Handle("POST", "/v1/nodes", fakeironic.Response{Status: http.StatusCreated, Body: fullNode})
		r := ferricctl(ctx, fake, nil, "-f", "value", "-c", "provision_state", "node", "create", "--driver", "ipmi", "--name", "node-07",
			"--driver-info", "ipmi_address=192.0.2.7", "--driver-info", "ipmi_port=623", "--property", "cpus=8",
			"--boot-interface", "ipxe", "--storage-interface", "cinder", "--resource-class", "gold")
		expectOK(r)
		Expect(r.stdout).To(Equal("enroll\n"))
		Expect(apiRequests(fake)[0].Body).To(MatchJSON(`{"driver": "ipmi", "name": "node-07",
			"driver_info": {"ipmi_address": "192.0.2.7", "ipmi_port": 623}, "properties": {"cpus": 8},
			"boot_interface": "ipxe", "storage_interface": "cinder", "resource_class": "gold"}`))
	})

	It("set sends replace and add operations", func(ctx SpecContext) {
		fake.Handle("PATCH", "/v1/nodes/node-07", fakeironic.Response{Status: http.StatusOK, Body: fullNode})
		expectOK(ferricctl(ctx, fake, nil, "node", "set", "node-07", "--storage-interface", "cinder", "--name", "node-08",
			"--driver-info", "ipmi_password=pw", "--instance-info", "image_source=http://img"))
		Expect(apiRequests(fake)[0].Body).To(MatchJSON(`[
			{"op": "replace", "path": "/name", "value": "node-08"},
			{"op": "replace", "path": "/storage_interface", "value": "cinder"},
			{"op": "add", "path": "/driver_info/ipmi_password", "value": "pw"},
			{"op": "add", "path": "/instance_info/image_source", "value": "http://img"}]`))
	})

	DescribeTable("provision verbs request the matching target",
		func(ctx SpecContext, verb, target string) {
			fake.Handle("PUT", "/v1/nodes/node-07/states/provision", fakeironic.Response{Status: http.StatusAccepted})
			r := ferricctl(ctx, fake, nil, "node", verb, "node-07")
			expectOK(r)
			Expect(r.stdout).To(BeEmpty())
			req := apiRequests(fake)[0]
			Expect(req.Method).To(Equal("PUT"))
			Expect(req.Body).To(MatchJSON(`{"target": "` + target + `"}`))
		},
		Entry("manage", "manage", "manage"),
		Entry("provide", "provide", "provide"),
		Entry("deploy", "deploy", "active"),
		Entry("undeploy", "undeploy", "deleted"),
		Entry("inspect", "inspect", "inspect"),
		Entry("abort", "abort", "abort"),
	)

	Describe("clean", func() {
		const steps = `[{"interface": "deploy", "step": "erase_devices_metadata"},
			{"interface": "deploy", "step": "erase_devices", "args": {"passes": 2}}]`
		const sent = `{"target": "clean", "clean_steps": [{"interface": "deploy", "step": "erase_devices_metadata"},
			{"interface": "deploy", "step": "erase_devices", "args": {"passes": 2}}]}`

		BeforeEach(func() {
			fake.Handle("PUT", "/v1/nodes/node-07/states/provision", fakeironic.Response{Status: http.StatusAccepted})
		})

		It("sends the steps given as JSON", func(ctx SpecContext) {
			r := ferricctl(ctx, fake, nil, "node", "clean", "node-07", "--clean-steps", steps)
			expectOK(r)
			Expect(r.stdout).To(BeEmpty())
			reqs := apiRequests(fake)
			Expect(reqs).To(HaveLen(1))
			Expect(reqs[0].Method).To(Equal("PUT"))
			Expect(reqs[0].Body).To(MatchJSON(sent))
		})

		It("reads the steps from @FILE", func(ctx SpecContext) {
			file := filepath.Join(GinkgoT().TempDir(), "steps.json")
			Expect(os.WriteFile(file, []byte(steps+"\n"), 0o600)).To(Succeed())
			expectOK(ferricctl(ctx, fake, nil, "node", "clean", "node-07", "--clean-steps", "@"+file))
			Expect(apiRequests(fake)[0].Body).To(MatchJSON(sent))
		})

		DescribeTable("refuses steps it cannot send as given, sending nothing",
			func(ctx SpecContext, arg, message string) {
				r := ferricctl(ctx, fake, nil, "node", "clean", "node-07", "--clean-steps", arg)
				Expect(r.code).To(Equal(1))
				Expect(r.stderr).To(ContainSubstring(message))
				Expect(apiRequests(fake)).To(BeEmpty())
			},
			Entry("not JSON", "erase_devices", "not a JSON list of steps"),
			Entry("an object, not a list", `{"interface": "deploy", "step": "erase_devices"}`, "not a JSON list of steps"),
			Entry("an unknown key", `[{"interface": "deploy", "step": "erase_devices", "priority": 10}]`, `unknown field "priority"`),
			Entry("trailing data", `[{"interface": "deploy", "step": "erase_devices"}] x`, "unexpected data after the JSON list"),
			Entry("no steps", `[]`, "give at least one step"),
			Entry("a missing file", "@/nonexistent/steps.json", "no such file"),
		)

		It("needs --clean-steps", func(ctx SpecContext) {
			r := ferricctl(ctx, fake, nil, "node", "clean", "node-07")
			Expect(r.code).To(Equal(1))
			Expect(r.stderr).To(ContainSubstring(`"clean-steps" not set`))
			Expect(fake.Requests()).To(BeEmpty())
		})

		It("reports the server's refusal", func(ctx SpecContext) {
			fake = startFake("1.80")
			fake.Handle("PUT", "/v1/nodes/node-07/states/provision", fault(http.StatusBadRequest,
				"Invalid clean_steps: 'bogus' is not a valid step interface"))
			r := ferricctl(ctx, fake, nil, "node", "clean", "node-07", "--clean-steps", `[{"interface": "bogus", "step": "x"}]`)
			Expect(r.code).To(Equal(1))
			Expect(r.stderr).To(Equal("Error: Invalid clean_steps: 'bogus' is not a valid step interface (HTTP 400)\n"))
		})
	})

	It("maintenance set and unset, with an optional reason", func(ctx SpecContext) {
		fake.Handle("PUT", "/v1/nodes/node-07/maintenance", fakeironic.Response{Status: http.StatusAccepted})
		fake.Handle("DELETE", "/v1/nodes/node-07/maintenance", fakeironic.Response{Status: http.StatusAccepted})
		expectOK(ferricctl(ctx, fake, nil, "node", "maintenance", "set", "node-07", "--reason", "disk swap"))
		expectOK(ferricctl(ctx, fake, nil, "node", "maintenance", "set", "node-07"))
		r := ferricctl(ctx, fake, nil, "node", "maintenance", "unset", "node-07")
		expectOK(r)
		Expect(r.stdout).To(BeEmpty())
		reqs := apiRequests(fake)
		Expect(reqs).To(HaveLen(3))
		Expect(reqs[0].Method).To(Equal("PUT"))
		Expect(reqs[0].Body).To(MatchJSON(`{"reason": "disk swap"}`))
		Expect(reqs[1].Body).To(MatchJSON(`{}`))
		Expect(reqs[2].Method).To(Equal("DELETE"))
	})

	It("power on/off request the power state, with an optional timeout", func(ctx SpecContext) {
		fake.Handle("PUT", "/v1/nodes/node-07/states/power", fakeironic.Response{Status: http.StatusAccepted})
		expectOK(ferricctl(ctx, fake, nil, "node", "power", "on", "node-07"))
		expectOK(ferricctl(ctx, fake, nil, "node", "power", "off", "node-07", "--power-timeout", "30"))
		reqs := apiRequests(fake)
		Expect(reqs[0].Body).To(MatchJSON(`{"target": "power on"}`))
		Expect(reqs[1].Body).To(MatchJSON(`{"target": "power off", "timeout": 30}`))
	})

	It("reports a refused state change", func(ctx SpecContext) {
		fake.Handle("PUT", "/v1/nodes/node-07/states/provision", fault(http.StatusConflict,
			"Node node-07 is locked by host cond-1, please retry after the current operation is completed."))
		r := ferricctl(ctx, fake, nil, "node", "provide", "node-07")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(Equal("Error: Node node-07 is locked by host cond-1, please retry after the current operation is completed. (HTTP 409)\n"))
	})

	It("delete deletes each node", func(ctx SpecContext) {
		fake.Handle("DELETE", "/v1/nodes/n1", fakeironic.Response{Status: http.StatusNoContent})
		fake.Handle("DELETE", "/v1/nodes/n2", fakeironic.Response{Status: http.StatusNoContent})
		r := ferricctl(ctx, fake, nil, "node", "delete", "n1", "n2")
		expectOK(r)
		Expect(r.stdout).To(Equal("Deleted node n1\nDeleted node n2\n"))
	})
})
