package targets_test

import (
	"net/http"
	"net/url"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/client/fakeironic"
	"github.com/ferricbm/ferric/client/volume/targets"
)

const (
	nodeUUID   = "c2d8a1f4-7b3e-4e0a-9d5c-1a2b3c4d5e6f"
	targetUUID = "0d5f3a2b-6c7e-4f80-91a2-b3c4d5e6f708"
	volumeID   = "a1b2c3d4-e5f6-4711-8899-aabbccddeeff"

	created = `{
		"uuid": "0d5f3a2b-6c7e-4f80-91a2-b3c4d5e6f708",
		"node_uuid": "c2d8a1f4-7b3e-4e0a-9d5c-1a2b3c4d5e6f",
		"volume_type": "iscsi",
		"boot_index": 0,
		"volume_id": "a1b2c3d4-e5f6-4711-8899-aabbccddeeff",
		"properties": {
			"target_iqn": "iqn.2010-10.org.example:vol-a1b2",
			"target_portal": "198.51.100.20:3260",
			"target_lun": 0,
			"auth_method": "CHAP",
			"auth_username": "node07",
			"auth_password": "******"
		},
		"extra": {},
		"created_at": "2026-05-01T10:30:00.500000+00:00",
		"updated_at": null,
		"links": [
			{"href": "{url}/v1/volume/targets/0d5f3a2b-6c7e-4f80-91a2-b3c4d5e6f708", "rel": "self"},
			{"href": "{url}/volume/targets/0d5f3a2b-6c7e-4f80-91a2-b3c4d5e6f708", "rel": "bookmark"}
		]
	}`
)

func expectVersionHeaders(r fakeironic.Request, version string) {
	GinkgoHelper()
	Expect(r.Header.Get("X-OpenStack-Ironic-API-Version")).To(Equal(version))
	Expect(r.Header.Get("OpenStack-API-Version")).To(Equal("baremetal " + version))
}

var _ = Describe("volume targets", func() {
	var (
		fake   *fakeironic.Server
		client *gophercloud.ServiceClient
	)
	BeforeEach(func() {
		fake = fakeironic.New()
		DeferCleanup(fake.Close)
		client = fake.Client("1.33")
	})

	It("creates a boot volume: boot_index 0 is sent, the masked password decoded as shown", func(ctx SpecContext) {
		fake.Handle("POST", "/v1/volume/targets", fakeironic.Response{Status: http.StatusCreated, Body: created})
		t, err := targets.Create(ctx, client, targets.CreateOpts{
			NodeUUID:   nodeUUID,
			VolumeType: "iscsi",
			BootIndex:  0,
			VolumeID:   volumeID,
			Properties: map[string]any{"target_iqn": "iqn.2010-10.org.example:vol-a1b2", "target_lun": 0, "auth_password": "s3cr3t"},
		}).Extract()
		Expect(err).NotTo(HaveOccurred())
		r := fake.Requests()[0]
		Expect(r.Method).To(Equal("POST"))
		Expect(r.Path).To(Equal("/v1/volume/targets"))
		expectVersionHeaders(r, "1.33")
		Expect(r.Body).To(MatchJSON(`{"node_uuid": "` + nodeUUID + `", "volume_type": "iscsi", "boot_index": 0,
			"volume_id": "` + volumeID + `", "properties": {"target_iqn": "iqn.2010-10.org.example:vol-a1b2", "target_lun": 0, "auth_password": "s3cr3t"}}`))

		Expect(t.UUID).To(Equal(targetUUID))
		Expect(t.BootIndex).To(Equal(0))
		Expect(t.VolumeType).To(Equal("iscsi"))
		Expect(t.Properties).To(HaveKeyWithValue("auth_password", "******"))
		Expect(t.Properties).To(HaveKeyWithValue("target_lun", float64(0)))
		Expect(t.Extra).To(BeEmpty())
		Expect(t.CreatedAt).To(BeTemporally("==", time.Date(2026, 5, 1, 10, 30, 0, 500000000, time.UTC)))
		Expect(t.UpdatedAt).To(BeNil())
	})

	It("refuses a target without a volume id, sending nothing", func(ctx SpecContext) {
		_, err := targets.Create(ctx, client, targets.CreateOpts{NodeUUID: nodeUUID, VolumeType: "iscsi"}).Extract()
		Expect(err).To(HaveOccurred())
		Expect(fake.Requests()).To(BeEmpty())
	})

	It("reports a boot index conflict as a 409", func(ctx SpecContext) {
		fake.Handle("POST", "/v1/volume/targets", fakeironic.Response{Status: http.StatusConflict,
			Body: `{"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"A volume target with boot index '0' for the same node already exists.\", \"debuginfo\": null}"}`})
		_, err := targets.Create(ctx, client, targets.CreateOpts{NodeUUID: nodeUUID, VolumeType: "iscsi", VolumeID: volumeID}).Extract()
		Expect(gophercloud.ResponseCodeIs(err, http.StatusConflict)).To(BeTrue(), "%v", err)
	})

	It("lists a node's targets in detail across pages", func(ctx SpecContext) {
		second := "1e6a4b3c-7d8e-4f90-a1b2-c3d4e5f60718"
		fake.Handle("GET", "/v1/nodes/"+nodeUUID+"/volume/targets", fakeironic.Response{Status: http.StatusOK,
			Body: `{"targets": [` + created + `], "next": "http://192.0.2.10:6385/v1/volume/targets?sort_key=boot_index&sort_dir=asc&detail=True&limit=1&marker=` + targetUUID + `"}`})
		fake.Handle("GET", "/v1/nodes/"+nodeUUID+"/volume/targets", fakeironic.Response{Status: http.StatusOK,
			Body: `{"targets": [{"uuid": "` + second + `", "node_uuid": "` + nodeUUID + `", "volume_type": "iscsi", "boot_index": 1,
				"volume_id": "` + volumeID + `", "properties": {}, "extra": {}, "created_at": "2026-05-01T10:31:00+00:00", "updated_at": null, "links": []}]}`})

		pages, err := targets.ListByNode(client, nodeUUID, targets.ListOpts{Detail: true, Limit: 1, SortKey: "boot_index"}).AllPages(ctx)
		Expect(err).NotTo(HaveOccurred())
		all, err := targets.ExtractTargets(pages)
		Expect(err).NotTo(HaveOccurred())
		Expect(all).To(HaveLen(2))
		Expect(all[0].Properties).To(HaveKeyWithValue("target_portal", "198.51.100.20:3260"))
		Expect(all[1].UUID).To(Equal(second))
		Expect(all[1].BootIndex).To(Equal(1))

		reqs := fake.Requests()
		Expect(reqs).To(HaveLen(2))
		for _, r := range reqs {
			Expect(r.Method).To(Equal("GET"))
			Expect(r.Path).To(Equal("/v1/nodes/" + nodeUUID + "/volume/targets"))
		}
		Expect(reqs[0].Query).To(Equal(url.Values{"detail": {"true"}, "limit": {"1"}, "sort_key": {"boot_index"}}))
		Expect(reqs[1].Query).To(Equal(url.Values{"detail": {"true"}, "limit": {"1"}, "sort_key": {"boot_index"}, "marker": {targetUUID}}))
	})

	It("lists full targets from /detail, keeping that path across pages and refusing fields", func(ctx SpecContext) {
		fake.Handle("GET", "/v1/volume/targets/detail", fakeironic.Response{Status: http.StatusOK,
			Body: `{"targets": [` + created + `], "next": "http://192.0.2.10:6385/v1/volume/targets/detail?sort_key=id&sort_dir=asc&node=node-07&limit=1&marker=` + targetUUID + `"}`})
		fake.Handle("GET", "/v1/volume/targets/detail", fakeironic.Response{Status: http.StatusOK, Body: `{"targets": []}`})

		pages, err := targets.ListDetail(client, targets.ListOpts{Node: "node-07", Detail: true, Limit: 1}).AllPages(ctx)
		Expect(err).NotTo(HaveOccurred())
		all, err := targets.ExtractTargets(pages)
		Expect(err).NotTo(HaveOccurred())
		Expect(all).To(HaveLen(1))
		Expect(all[0].Properties).To(HaveKeyWithValue("target_portal", "198.51.100.20:3260"))
		reqs := fake.Requests()
		Expect(reqs).To(HaveLen(2))
		Expect(reqs[0].Path).To(Equal("/v1/volume/targets/detail"))
		Expect(reqs[0].Query).To(Equal(url.Values{"node": {"node-07"}, "limit": {"1"}}), "detail is the path's, not a parameter")
		Expect(reqs[1].Path).To(Equal("/v1/volume/targets/detail"))
		Expect(reqs[1].Query).To(Equal(url.Values{"node": {"node-07"}, "limit": {"1"}, "marker": {targetUUID}}))

		_, err = targets.ListDetail(client, targets.ListOpts{Fields: []string{"uuid"}}).AllPages(ctx)
		Expect(err).To(MatchError(ContainSubstring("fields is not a valid option")))
		Expect(fake.Requests()).To(HaveLen(2), "nothing sent")
	})

	It("lists with the node filter and fields", func(ctx SpecContext) {
		fake.Handle("GET", "/v1/volume/targets", fakeironic.Response{Status: http.StatusOK, Body: `{"targets": []}`})
		pages, err := targets.List(client, targets.ListOpts{Node: "node-07", Fields: []string{"uuid", "boot_index"}}).AllPages(ctx)
		Expect(err).NotTo(HaveOccurred())
		all, err := targets.ExtractTargets(pages)
		Expect(err).NotTo(HaveOccurred())
		Expect(all).To(BeEmpty())
		Expect(fake.Requests()[0].Query).To(Equal(url.Values{"node": {"node-07"}, "fields": {"uuid,boot_index"}}))
	})

	It("gets, updates and deletes a target", func(ctx SpecContext) {
		fake.Handle("GET", "/v1/volume/targets/"+targetUUID, fakeironic.Response{Status: http.StatusOK, Body: created})
		fake.Handle("PATCH", "/v1/volume/targets/"+targetUUID, fakeironic.Response{Status: http.StatusOK, Body: created})
		fake.Handle("DELETE", "/v1/volume/targets/"+targetUUID, fakeironic.Response{Status: http.StatusNoContent})

		t, err := targets.Get(ctx, client, targetUUID, targets.GetOpts{Fields: []string{"boot_index", "properties"}}).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(t.VolumeID).To(Equal(volumeID))
		_, err = targets.Update(ctx, client, targetUUID, targets.UpdateOpts{
			targets.UpdateOperation{Op: targets.ReplaceOp, Path: "/boot_index", Value: 1},
			targets.UpdateOperation{Op: targets.RemoveOp, Path: "/properties/auth_password"},
		}).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(targets.Delete(ctx, client, targetUUID).ExtractErr()).To(Succeed())

		reqs := fake.Requests()
		Expect(reqs).To(HaveLen(3))
		Expect(reqs[0].Query).To(Equal(url.Values{"fields": {"boot_index,properties"}}))
		Expect(reqs[1].Method).To(Equal("PATCH"))
		Expect(reqs[1].Body).To(MatchJSON(`[{"op": "replace", "path": "/boot_index", "value": 1}, {"op": "remove", "path": "/properties/auth_password"}]`))
		Expect(reqs[2].Method).To(Equal("DELETE"))
		Expect(reqs[2].Path).To(Equal("/v1/volume/targets/" + targetUUID))
		for _, r := range reqs {
			expectVersionHeaders(r, "1.33")
		}
	})
})
