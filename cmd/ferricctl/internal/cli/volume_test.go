package cli_test

import (
	"net/http"
	"net/url"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/client/fakeironic"
)

const (
	nodeUUID = "c2d8a1f4-7b3e-4e0a-9d5c-1a2b3c4d5e6f"
	connA    = "4b2a6f0e-8c1d-4f57-9a3e-2f6d0c9b7a11"
	connB    = "7f0c2e93-15d4-4b8a-8e61-0d9a3b2c4f55"
	targetT  = "0d5f3a2b-6c7e-4f80-91a2-b3c4d5e6f708"

	connectorJSON = `{"uuid": "7f0c2e93-15d4-4b8a-8e61-0d9a3b2c4f55", "node_uuid": "c2d8a1f4-7b3e-4e0a-9d5c-1a2b3c4d5e6f",
		"type": "wwpn", "connector_id": "21:00:00:1b:21:aa:bb:cc", "extra": {"fabric": "A"},
		"created_at": "2026-05-01T10:20:00.000001+00:00", "updated_at": null,
		"links": [{"href": "{url}/v1/volume/connectors/7f0c2e93-15d4-4b8a-8e61-0d9a3b2c4f55", "rel": "self"},
		          {"href": "{url}/volume/connectors/7f0c2e93-15d4-4b8a-8e61-0d9a3b2c4f55", "rel": "bookmark"}]}`

	targetJSON = `{"uuid": "0d5f3a2b-6c7e-4f80-91a2-b3c4d5e6f708", "node_uuid": "c2d8a1f4-7b3e-4e0a-9d5c-1a2b3c4d5e6f",
		"volume_type": "iscsi", "boot_index": 0, "volume_id": "a1b2c3d4-e5f6-4711-8899-aabbccddeeff",
		"properties": {"target_iqn": "iqn.2010-10.org.example:vol-a1b2", "target_lun": 0, "auth_password": "******"},
		"extra": {}, "created_at": "2026-05-01T10:30:00.500000+00:00", "updated_at": null, "links": []}`
)

func shortConnector(uuid, typ, id string) string {
	return `{"uuid": "` + uuid + `", "node_uuid": "` + nodeUUID + `", "type": "` + typ + `", "connector_id": "` + id + `", "links": []}`
}

var _ = Describe("volume commands", func() {
	var fake *fakeironic.Server
	BeforeEach(func() {
		fake = startFake("1.80")
	})

	Describe("version negotiation", func() {
		It("uses the newest version the server advertises", func(ctx SpecContext) {
			fake.Handle("GET", "/v1/volume/connectors", fakeironic.Response{Status: http.StatusOK, Body: `{"connectors": []}`})
			expectOK(ferricctl(ctx, fake, nil, "volume", "connector", "list"))
			reqs := fake.Requests()
			Expect(reqs).To(HaveLen(2))
			Expect(reqs[0].Path).To(Equal("/v1/"))
			Expect(reqs[1].Header.Get("X-OpenStack-Ironic-API-Version")).To(Equal("1.80"))
			Expect(reqs[1].Header.Get("OpenStack-API-Version")).To(Equal("baremetal 1.80"))
		})

		It("falls back to 1.33 when the server does not say", func(ctx SpecContext) {
			fake = startFake("")
			fake.Handle("GET", "/v1/", fakeironic.Response{Status: http.StatusOK, Body: `{"id": "v1"}`})
			fake.Handle("GET", "/v1/volume/connectors", fakeironic.Response{Status: http.StatusOK, Body: `{"connectors": []}`})
			expectOK(ferricctl(ctx, fake, nil, "volume", "connector", "list"))
			Expect(apiRequests(fake)[0].Header.Get("X-OpenStack-Ironic-API-Version")).To(Equal("1.33"))
		})

		It("uses a pinned version from the flag or OS_BAREMETAL_API_VERSION without asking", func(ctx SpecContext) {
			fake.Handle("GET", "/v1/volume/targets", fakeironic.Response{Status: http.StatusOK, Body: `{"targets": []}`})
			expectOK(ferricctl(ctx, fake, map[string]string{"OS_BAREMETAL_API_VERSION": "1.40"}, "volume", "target", "list"))
			expectOK(ferricctl(ctx, fake, map[string]string{"OS_BAREMETAL_API_VERSION": "1.40"}, "--os-baremetal-api-version", "1.32", "volume", "target", "list"))
			reqs := fake.Requests()
			Expect(reqs).To(HaveLen(2))
			Expect(reqs[0].Header.Get("X-OpenStack-Ironic-API-Version")).To(Equal("1.40"))
			Expect(reqs[1].Header.Get("X-OpenStack-Ironic-API-Version")).To(Equal("1.32"))
		})

		It("refuses a version before the volume API, sending nothing", func(ctx SpecContext) {
			r := ferricctl(ctx, fake, nil, "--os-baremetal-api-version", "1.31", "volume", "connector", "list")
			Expect(r.code).To(Equal(1))
			Expect(r.stderr).To(Equal("Error: this command needs Bare Metal API version 1.32 or later; using 1.31\n"))
			Expect(fake.Requests()).To(BeEmpty())

			r = ferricctl(ctx, fake, nil, "--os-baremetal-api-version", "one", "volume", "connector", "list")
			Expect(r.stderr).To(ContainSubstring(`invalid API version "one"`))
		})

		It("accepts an endpoint given with /v1 and a trailing slash", func(ctx SpecContext) {
			fake.Handle("GET", "/v1/volume/connectors", fakeironic.Response{Status: http.StatusOK, Body: `{"connectors": []}`})
			expectOK(ferricctl(ctx, fake, map[string]string{"OS_ENDPOINT": fake.URL + "/v1/"}, "volume", "connector", "list"))
			Expect(apiRequests(fake)[0].Path).To(Equal("/v1/volume/connectors"))
		})
	})

	It("fails on an unknown subcommand instead of printing help", func(ctx SpecContext) {
		r := ferricctl(ctx, fake, nil, "volume", "connector", "frob")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(Equal("Error: unknown command \"frob\" for \"ferricctl volume connector\"\n"))
		r = ferricctl(ctx, fake, nil, "volume", "target")
		Expect(r.code).To(Equal(0))
		Expect(r.stdout).To(ContainSubstring("Available Commands:"))
		Expect(fake.Requests()).To(BeEmpty())
	})

	Describe("authentication", func() {
		It("sends HTTP basic credentials from the environment", func(ctx SpecContext) {
			fake.Handle("GET", "/v1/volume/connectors", fakeironic.Response{Status: http.StatusOK, Body: `{"connectors": []}`})
			env := map[string]string{"OS_AUTH_TYPE": "http_basic", "OS_USERNAME": "admin", "OS_PASSWORD": "pa55"}
			expectOK(ferricctl(ctx, fake, env, "volume", "connector", "list"))
			for _, r := range fake.Requests() {
				Expect(r.Header.Get("Authorization")).To(Equal("Basic YWRtaW46cGE1NQ=="))
			}
		})

		It("needs both user and password for http_basic", func(ctx SpecContext) {
			r := ferricctl(ctx, fake, map[string]string{"OS_USERNAME": "admin"}, "--os-auth-type", "http_basic", "volume", "connector", "list")
			Expect(r.code).To(Equal(1))
			Expect(r.stderr).To(ContainSubstring("http_basic needs --os-username and --os-password"))
			Expect(fake.Requests()).To(BeEmpty())
		})
	})

	Describe("volume connector", func() {
		It("create sends the options and shows the connector", func(ctx SpecContext) {
			fake.Handle("POST", "/v1/volume/connectors", fakeironic.Response{Status: http.StatusCreated, Body: connectorJSON})
			r := ferricctl(ctx, fake, nil, "volume", "connector", "create", "--node", nodeUUID, "--type", "wwpn",
				"--connector-id", "21:00:00:1b:21:aa:bb:cc", "--extra", "fabric=A", "--extra", "rank=2", "--uuid", connB)
			expectOK(r)
			req := apiRequests(fake)[0]
			Expect(req.Method).To(Equal("POST"))
			Expect(req.Body).To(MatchJSON(`{"node_uuid": "` + nodeUUID + `", "type": "wwpn", "connector_id": "21:00:00:1b:21:aa:bb:cc",
				"extra": {"fabric": "A", "rank": 2}, "uuid": "` + connB + `"}`))
			Expect(r.stdout).To(Equal(
				"+--------------+--------------------------------------+\n" +
					"| Field        | Value                                |\n" +
					"+--------------+--------------------------------------+\n" +
					"| connector_id | 21:00:00:1b:21:aa:bb:cc              |\n" +
					"| created_at   | 2026-05-01T10:20:00.000001+00:00     |\n" +
					"| extra        | {\"fabric\":\"A\"}                       |\n" +
					"| node_uuid    | c2d8a1f4-7b3e-4e0a-9d5c-1a2b3c4d5e6f |\n" +
					"| type         | wwpn                                 |\n" +
					"| updated_at   | None                                 |\n" +
					"| uuid         | 7f0c2e93-15d4-4b8a-8e61-0d9a3b2c4f55 |\n" +
					"+--------------+--------------------------------------+\n"))
		})

		It("create requires node, type and connector id, sending nothing", func(ctx SpecContext) {
			r := ferricctl(ctx, fake, nil, "volume", "connector", "create", "--node", nodeUUID, "--type", "iqn")
			Expect(r.code).To(Equal(1))
			Expect(r.stderr).To(ContainSubstring(`"connector-id" not set`))
			r = ferricctl(ctx, fake, nil, "volume", "connector", "create", "--node", nodeUUID, "--type", "iqn", "--connector-id", "x", "--extra", "novalue")
			Expect(r.stderr).To(ContainSubstring(`--extra: "novalue" is not KEY=VALUE`))
			Expect(fake.Requests()).To(BeEmpty())
		})

		It("create shows the server's refusal and exits 1", func(ctx SpecContext) {
			fake.Handle("POST", "/v1/volume/connectors", fault(http.StatusConflict, "A volume connector with type wwpn and connector ID 21:00:00:1b:21:aa:bb:cc already exists."))
			r := ferricctl(ctx, fake, nil, "volume", "connector", "create", "--node", nodeUUID, "--type", "wwpn", "--connector-id", "21:00:00:1b:21:aa:bb:cc")
			Expect(r.code).To(Equal(1))
			Expect(r.stdout).To(BeEmpty())
			Expect(r.stderr).To(Equal("Error: A volume connector with type wwpn and connector ID 21:00:00:1b:21:aa:bb:cc already exists. (HTTP 409)\n"))
		})

		It("list shows the default columns of one page", func(ctx SpecContext) {
			fake.Handle("GET", "/v1/volume/connectors", fakeironic.Response{Status: http.StatusOK, Body: `{"connectors": [` +
				shortConnector(connA, "iqn", "iqn.2004-06.example.net:node-07") + `]}`})
			r := ferricctl(ctx, fake, nil, "volume", "connector", "list", "--node", "node-07")
			expectOK(r)
			Expect(apiRequests(fake)[0].Query).To(Equal(url.Values{"node": {"node-07"}}))
			Expect(r.stdout).To(Equal(
				"+--------------------------------------+--------------------------------------+------+---------------------------------+\n" +
					"| UUID                                 | Node UUID                            | Type | Connector ID                    |\n" +
					"+--------------------------------------+--------------------------------------+------+---------------------------------+\n" +
					"| 4b2a6f0e-8c1d-4f57-9a3e-2f6d0c9b7a11 | c2d8a1f4-7b3e-4e0a-9d5c-1a2b3c4d5e6f | iqn  | iqn.2004-06.example.net:node-07 |\n" +
					"+--------------------------------------+--------------------------------------+------+---------------------------------+\n"))
		})

		It("list --long asks for detail, --fields for those fields, --sort for the order", func(ctx SpecContext) {
			fake.Handle("GET", "/v1/volume/connectors", fakeironic.Response{Status: http.StatusOK, Body: `{"connectors": [` + connectorJSON + `]}`})
			r := ferricctl(ctx, fake, nil, "-f", "json", "volume", "connector", "list", "--long", "--sort", "type:desc", "--marker", connA)
			expectOK(r)
			Expect(r.stdout).To(MatchJSON(`[{"UUID": "` + connB + `", "Node UUID": "` + nodeUUID + `", "Type": "wwpn",
				"Connector ID": "21:00:00:1b:21:aa:bb:cc", "Extra": {"fabric": "A"}, "Created At": "2026-05-01T10:20:00.000001+00:00", "Updated At": null}]`))

			r = ferricctl(ctx, fake, nil, "-f", "value", "volume", "connector", "list", "--fields", "uuid,type", "--fields", "extra")
			expectOK(r)
			Expect(r.stdout).To(Equal(connB + ` wwpn {"fabric":"A"}` + "\n"))

			reqs := apiRequests(fake)
			Expect(reqs[0].Query).To(Equal(url.Values{"detail": {"true"}, "sort_key": {"type"}, "sort_dir": {"desc"}, "marker": {connA}}))
			Expect(reqs[1].Query).To(Equal(url.Values{"fields": {"uuid,type,extra"}}))
		})

		It("list refuses bad options, sending nothing", func(ctx SpecContext) {
			for _, args := range [][]string{
				{"--long", "--fields", "uuid"},
				{"--fields", "node_id"},
				{"--sort", "type:up"},
				{"--limit", "-5"},
			} {
				r := ferricctl(ctx, fake, nil, append([]string{"volume", "connector", "list"}, args...)...)
				Expect(r.code).To(Equal(1), "%v", args)
			}
			Expect(fake.Requests()).To(BeEmpty())
		})

		It("list --limit N returns at most N, asking only for what it needs", func(ctx SpecContext) {
			// The server caps pages at 2: a third item needs a second page.
			fake.Handle("GET", "/v1/volume/connectors", fakeironic.Response{Status: http.StatusOK, Body: `{"connectors": [` +
				shortConnector(connA, "iqn", "a") + `,` + shortConnector(connB, "iqn", "b") + `], "next": "http://192.0.2.10:6385/v1/volume/connectors?limit=2&marker=` + connB + `"}`})
			fake.Handle("GET", "/v1/volume/connectors", fakeironic.Response{Status: http.StatusOK, Body: `{"connectors": [` +
				shortConnector("11111111-1111-4111-8111-111111111111", "iqn", "c") + `,` + shortConnector("22222222-2222-4222-8222-222222222222", "iqn", "d") + `]}`})
			r := ferricctl(ctx, fake, nil, "-f", "value", "-c", "Connector ID", "volume", "connector", "list", "--limit", "3")
			expectOK(r)
			Expect(r.stdout).To(Equal("a\nb\nc\n"))
			reqs := apiRequests(fake)
			Expect(reqs).To(HaveLen(2))
			Expect(reqs[0].Query).To(Equal(url.Values{"limit": {"3"}}))
			Expect(reqs[1].Query).To(Equal(url.Values{"limit": {"3"}, "marker": {connB}}))
		})

		It("list --limit 0 follows every page; no --limit reads one page", func(ctx SpecContext) {
			first := fakeironic.Response{Status: http.StatusOK, Body: `{"connectors": [` + shortConnector(connA, "iqn", "a") +
				`], "next": "http://192.0.2.10:6385/v1/volume/connectors?limit=1&marker=` + connA + `"}`}
			second := fakeironic.Response{Status: http.StatusOK, Body: `{"connectors": [` + shortConnector(connB, "iqn", "b") + `]}`}
			fake.Handle("GET", "/v1/volume/connectors", first)
			fake.Handle("GET", "/v1/volume/connectors", second)
			r := ferricctl(ctx, fake, nil, "-f", "value", "-c", "connector_id", "volume", "connector", "list", "--limit", "0", "--node", "n1")
			expectOK(r)
			Expect(r.stdout).To(Equal("a\nb\n"))
			Expect(apiRequests(fake)[1].Query).To(Equal(url.Values{"node": {"n1"}, "marker": {connA}}), "the node filter survives paging")

			fake.Handle("GET", "/v1/volume/connectors", first)
			r = ferricctl(ctx, fake, nil, "-f", "value", "-c", "connector_id", "volume", "connector", "list")
			expectOK(r)
			Expect(r.stdout).To(Equal("a\n"))
			Expect(apiRequests(fake)).To(HaveLen(3))
		})

		It("show asks for the chosen fields and prints them sorted", func(ctx SpecContext) {
			fake.Handle("GET", "/v1/volume/connectors/"+connB, fakeironic.Response{Status: http.StatusOK,
				Body: `{"node_uuid": "` + nodeUUID + `", "connector_id": "21:00:00:1b:21:aa:bb:cc", "links": []}`})
			r := ferricctl(ctx, fake, nil, "-f", "yaml", "volume", "connector", "show", connB, "--fields", "node_uuid,connector_id")
			expectOK(r)
			Expect(r.stdout).To(Equal("connector_id: 21:00:00:1b:21:aa:bb:cc\nnode_uuid: " + nodeUUID + "\n"))
			Expect(apiRequests(fake)[0].Query).To(Equal(url.Values{"fields": {"node_uuid,connector_id"}}))
		})

		It("show reports an unknown connector", func(ctx SpecContext) {
			fake.Handle("GET", "/v1/volume/connectors/"+connA, fault(http.StatusNotFound, "Volume connector "+connA+" could not be found."))
			r := ferricctl(ctx, fake, nil, "volume", "connector", "show", connA)
			Expect(r.code).To(Equal(1))
			Expect(r.stderr).To(Equal("Error: Volume connector " + connA + " could not be found. (HTTP 404)\n"))
		})

		It("set and unset send JSON patches", func(ctx SpecContext) {
			fake.Handle("PATCH", "/v1/volume/connectors/"+connB, fakeironic.Response{Status: http.StatusOK, Body: connectorJSON})
			expectOK(ferricctl(ctx, fake, nil, "volume", "connector", "set", connB, "--connector-id", "21:00:00:1b:21:aa:bb:dd",
				"--extra", "fabric=B", "--extra", "zone={\"a\": 1}", "--node", nodeUUID))
			expectOK(ferricctl(ctx, fake, nil, "volume", "connector", "unset", connB, "--extra", "fabric", "--extra", "zone"))
			reqs := apiRequests(fake)
			Expect(reqs).To(HaveLen(2))
			Expect(reqs[0].Method).To(Equal("PATCH"))
			Expect(reqs[0].Body).To(MatchJSON(`[
				{"op": "replace", "path": "/node_uuid", "value": "` + nodeUUID + `"},
				{"op": "replace", "path": "/connector_id", "value": "21:00:00:1b:21:aa:bb:dd"},
				{"op": "add", "path": "/extra/fabric", "value": "B"},
				{"op": "add", "path": "/extra/zone", "value": {"a": 1}}]`))
			Expect(reqs[1].Body).To(MatchJSON(`[{"op": "remove", "path": "/extra/fabric"}, {"op": "remove", "path": "/extra/zone"}]`))

			r := ferricctl(ctx, fake, nil, "volume", "connector", "set", connB)
			Expect(r.code).To(Equal(1))
			Expect(r.stderr).To(ContainSubstring("nothing to change"))
			Expect(apiRequests(fake)).To(HaveLen(2))
		})

		It("delete deletes each connector and reports the ones that failed", func(ctx SpecContext) {
			fake.Handle("DELETE", "/v1/volume/connectors/"+connA, fakeironic.Response{Status: http.StatusNoContent})
			fake.Handle("DELETE", "/v1/volume/connectors/"+connB, fault(http.StatusBadRequest,
				`The requested action \\\"volume connector deletion\\\" can not be performed on node \\\"`+nodeUUID+`\\\" while it is in state \\\"power on\\\".`))
			r := ferricctl(ctx, fake, nil, "volume", "connector", "delete", connA, connB)
			Expect(r.code).To(Equal(1))
			Expect(r.stdout).To(Equal("Deleted volume connector " + connA + "\n"))
			Expect(r.stderr).To(Equal("Failed to delete volume connector " + connB + `: The requested action "volume connector deletion" can not be performed on node "` +
				nodeUUID + `" while it is in state "power on". (HTTP 400)` + "\nError: failed to delete 1 of 2 volume connectors\n"))
			Expect(apiRequests(fake)).To(HaveLen(2))
		})
	})

	Describe("volume target", func() {
		It("create sends typed properties and boot index 0, and shows the masked result", func(ctx SpecContext) {
			fake.Handle("POST", "/v1/volume/targets", fakeironic.Response{Status: http.StatusCreated, Body: targetJSON})
			r := ferricctl(ctx, fake, nil, "-f", "json", "volume", "target", "create", "--node", nodeUUID, "--volume-type", "iscsi",
				"--boot-index", "0", "--volume-id", "a1b2c3d4-e5f6-4711-8899-aabbccddeeff",
				"--property", "target_iqn=iqn.2010-10.org.example:vol-a1b2", "--property", "target_lun=0", "--property", "auth_password=s3cr3t")
			expectOK(r)
			Expect(apiRequests(fake)[0].Body).To(MatchJSON(`{"node_uuid": "` + nodeUUID + `", "volume_type": "iscsi", "boot_index": 0,
				"volume_id": "a1b2c3d4-e5f6-4711-8899-aabbccddeeff",
				"properties": {"target_iqn": "iqn.2010-10.org.example:vol-a1b2", "target_lun": 0, "auth_password": "s3cr3t"}}`))
			Expect(r.stdout).To(MatchJSON(`{"boot_index": 0, "created_at": "2026-05-01T10:30:00.500000+00:00", "extra": {},
				"node_uuid": "` + nodeUUID + `",
				"properties": {"target_iqn": "iqn.2010-10.org.example:vol-a1b2", "target_lun": 0, "auth_password": "******"},
				"updated_at": null, "uuid": "` + targetT + `", "volume_id": "a1b2c3d4-e5f6-4711-8899-aabbccddeeff", "volume_type": "iscsi"}`))
			Expect(r.stdout).NotTo(ContainSubstring("s3cr3t"))
		})

		It("create needs a type, by either name", func(ctx SpecContext) {
			r := ferricctl(ctx, fake, nil, "volume", "target", "create", "--node", nodeUUID, "--boot-index", "0", "--volume-id", "v")
			Expect(r.code).To(Equal(1))
			Expect(r.stderr).To(ContainSubstring("type volume-type"))
			Expect(fake.Requests()).To(BeEmpty())
		})

		It("list shows the default target columns", func(ctx SpecContext) {
			fake.Handle("GET", "/v1/volume/targets", fakeironic.Response{Status: http.StatusOK, Body: `{"targets": [` + targetJSON + `]}`})
			r := ferricctl(ctx, fake, nil, "-f", "json", "volume", "target", "list", "--node", nodeUUID)
			expectOK(r)
			Expect(r.stdout).To(MatchJSON(`[{"UUID": "` + targetT + `", "Node UUID": "` + nodeUUID + `", "Driver Volume Type": "iscsi",
				"Boot Index": 0, "Volume ID": "a1b2c3d4-e5f6-4711-8899-aabbccddeeff"}]`))
		})

		It("set and unset send JSON patches", func(ctx SpecContext) {
			fake.Handle("PATCH", "/v1/volume/targets/"+targetT, fakeironic.Response{Status: http.StatusOK, Body: targetJSON})
			expectOK(ferricctl(ctx, fake, nil, "volume", "target", "set", targetT, "--boot-index", "1", "--type", "fibre_channel",
				"--volume-id", "f0e1d2c3-b4a5-4968-8776-655443322110", "--property", "target_lun=1", "--extra", "k=v"))
			expectOK(ferricctl(ctx, fake, nil, "volume", "target", "unset", targetT, "--property", "auth_password", "--extra", "k"))
			reqs := apiRequests(fake)
			Expect(reqs[0].Body).To(MatchJSON(`[
				{"op": "replace", "path": "/volume_type", "value": "fibre_channel"},
				{"op": "replace", "path": "/boot_index", "value": 1},
				{"op": "replace", "path": "/volume_id", "value": "f0e1d2c3-b4a5-4968-8776-655443322110"},
				{"op": "add", "path": "/properties/target_lun", "value": 1},
				{"op": "add", "path": "/extra/k", "value": "v"}]`))
			Expect(reqs[1].Body).To(MatchJSON(`[{"op": "remove", "path": "/properties/auth_password"}, {"op": "remove", "path": "/extra/k"}]`))
		})

		It("show and delete address the target by uuid", func(ctx SpecContext) {
			fake.Handle("GET", "/v1/volume/targets/"+targetT, fakeironic.Response{Status: http.StatusOK, Body: targetJSON})
			fake.Handle("DELETE", "/v1/volume/targets/"+targetT, fakeironic.Response{Status: http.StatusNoContent})
			r := ferricctl(ctx, fake, nil, "-f", "value", "-c", "boot_index", "-c", "volume_type", "volume", "target", "show", targetT)
			expectOK(r)
			Expect(r.stdout).To(Equal("0\niscsi\n"))
			r = ferricctl(ctx, fake, nil, "volume", "target", "delete", targetT)
			expectOK(r)
			Expect(r.stdout).To(Equal("Deleted volume target " + targetT + "\n"))
		})
	})
})
