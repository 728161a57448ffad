package volume_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/client/volume"
	"github.com/ferricbm/ferric/client/volume/connectors"
	"github.com/ferricbm/ferric/client/volume/targets"
	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/harness"
)

// Secrets put into target properties; none may ever leave the service.
var secrets = []string{"chap-pw-7f3a9c", "chap-secret-91bd", "ctl-pw-5e2c"}

const (
	v32 = "1.32"
	v33 = "1.33"
)

var _ = Describe("Volume API", Ordered, func() {
	var (
		c    *gophercloud.ServiceClient
		node *nodes.Node
		ctx  = context.Background()
	)

	// powered creates a node with the given power state reached through
	// the conductor's power action.
	powered := func(name, state string) *nodes.Node {
		GinkgoHelper()
		n := steps.CreateNode(ctx, c, name)
		setPower(ctx, n.UUID, state)
		return n
	}

	BeforeAll(func() {
		c = client(v33)
		node = powered(steps.Name("vol", 0), "power off")
	})

	isCode := func(err error, code int) {
		GinkgoHelper()
		Expect(err).To(HaveOccurred())
		Expect(gophercloud.ResponseCodeIs(err, code)).To(BeTrue(), "want %d, got %v", code, err)
	}

	It("serves the root documents and links the volume from nodes and /v1", func() {
		root, err := volume.Get(ctx, c).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(root.Connectors).To(ContainElement(volume.Link{Href: apiURL + "/v1/volume/connectors", Rel: "self"}))
		Expect(root.Links).To(ContainElement(volume.Link{Href: apiURL + "/volume/", Rel: "bookmark"}))

		byName, err := volume.GetByNode(ctx, c, node.Name).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(byName.Targets).To(ContainElement(volume.Link{Href: apiURL + "/v1/nodes/" + node.Name + "/volume/targets", Rel: "self"}))
		_, err = volume.GetByNode(ctx, c, "no-such-node").Extract()
		isCode(err, 404)

		var doc map[string]any
		Expect(json.Unmarshal(raw(ctx, v32, http.MethodGet, "/v1/nodes/"+node.UUID, nil).Body, &doc)).To(Succeed())
		Expect(doc).To(HaveKey("volume"))
		Expect(json.Unmarshal(raw(ctx, v32, http.MethodGet, "/v1", nil).Body, &doc)).To(Succeed())
		Expect(doc).To(HaveKey("volume"))
	})

	It("hides the API below 1.32 and storage_interface below 1.33", func() {
		old := client("1.31")
		_, err := volume.Get(ctx, old).Extract()
		isCode(err, 404)
		_, err = connectors.Create(ctx, old, connectors.CreateOpts{NodeUUID: node.UUID, Type: "iqn", ConnectorID: "iqn.old"}).Extract()
		isCode(err, 404)
		_, err = targets.List(old, nil).AllPages(ctx)
		isCode(err, 404)
		r := raw(ctx, "1.31", http.MethodGet, "/v1/nodes/"+node.UUID+"/volume/connectors", nil)
		Expect(r.Status).To(Equal(404))
		Expect(fault(r)).To(Equal("The API is not supported for this version"))

		r = raw(ctx, v32, http.MethodPatch, "/v1/nodes/"+node.UUID, []map[string]any{{"op": "replace", "path": "/storage_interface", "value": "cinder"}})
		Expect(r.Status).To(Equal(406))
		r = raw(ctx, v32, http.MethodPost, "/v1/nodes", map[string]any{"driver": "fake-hardware", "storage_interface": "cinder"})
		Expect(r.Status).To(Equal(406))
		Expect(raw(ctx, v32, http.MethodGet, "/v1/nodes/"+node.UUID+"?fields=storage_interface", nil).Status).To(Equal(406))
		var n map[string]any
		Expect(json.Unmarshal(raw(ctx, v33, http.MethodGet, "/v1/nodes/"+node.UUID, nil).Body, &n)).To(Succeed())
		Expect(n).To(HaveKeyWithValue("storage_interface", "noop"))
	})

	It("creates, shows, lists, patches and deletes connectors with every option", func() {
		other := powered(steps.Name("vol", 1), "power off")
		made := map[string]string{}
		for i, typ := range []string{"iqn", "ip", "wwpn", "wwnn"} {
			vc, err := connectors.Create(ctx, c, connectors.CreateOpts{
				NodeUUID: node.UUID, Type: typ, ConnectorID: fmt.Sprintf("%s-%s-%d", typ, node.UUID[:8], i),
				Extra: map[string]any{"i": i},
			}).Extract()
			Expect(err).NotTo(HaveOccurred())
			Expect(vc.NodeUUID).To(Equal(node.UUID))
			Expect(vc.UpdatedAt).To(BeNil())
			Expect(vc.CreatedAt).NotTo(BeZero())
			made[typ] = vc.UUID
		}
		_, err := connectors.Create(ctx, c, connectors.CreateOpts{NodeUUID: other.UUID, Type: "mac", ConnectorID: harness.RandomMAC()}).Extract()
		Expect(err).NotTo(HaveOccurred())

		got, err := connectors.Get(ctx, c, made["iqn"], nil).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Extra).To(HaveKeyWithValue("i", BeNumerically("==", 0)))
		sel, err := connectors.Get(ctx, c, made["iqn"], connectors.GetOpts{Fields: []string{"type"}}).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(sel.Type).To(Equal("iqn"))
		Expect(sel.ConnectorID).To(BeEmpty())

		list := func(pager func() ([]connectors.VolumeConnector, error)) []connectors.VolumeConnector {
			GinkgoHelper()
			l, err := pager()
			Expect(err).NotTo(HaveOccurred())
			return l
		}
		all := func(opts connectors.ListOpts) func() ([]connectors.VolumeConnector, error) {
			return func() ([]connectors.VolumeConnector, error) {
				p, err := connectors.List(c, opts).AllPages(ctx)
				if err != nil {
					return nil, err
				}
				return connectors.ExtractConnectors(p)
			}
		}
		byNode := func(n string, opts connectors.ListOpts) func() ([]connectors.VolumeConnector, error) {
			return func() ([]connectors.VolumeConnector, error) {
				p, err := connectors.ListByNode(c, n, opts).AllPages(ctx)
				if err != nil {
					return nil, err
				}
				return connectors.ExtractConnectors(p)
			}
		}
		Expect(list(all(connectors.ListOpts{Node: node.Name}))).To(HaveLen(4))
		Expect(list(all(connectors.ListOpts{Node: node.UUID, Limit: 1}))).To(HaveLen(4), "next keeps the node filter")
		Expect(list(byNode(node.Name, connectors.ListOpts{Limit: 3}))).To(HaveLen(4), "node-scoped next stays node-scoped")
		Expect(list(byNode(other.UUID, connectors.ListOpts{}))).To(HaveLen(1))
		detail := list(all(connectors.ListOpts{Node: node.Name, Detail: true, Limit: 2}))
		Expect(detail).To(HaveLen(4))
		Expect(detail[0].Extra).To(HaveKey("i"))
		for _, n := range []string{node.Name, node.UUID} {
			pages, err := connectors.ListDetail(c, connectors.ListOpts{Node: n, Limit: 3}).AllPages(ctx)
			Expect(err).NotTo(HaveOccurred(), "GET /v1/volume/connectors/detail?node=%s", n)
			full, err := connectors.ExtractConnectors(pages)
			Expect(err).NotTo(HaveOccurred())
			Expect(full).To(HaveLen(4), "/detail pages keep the node filter")
			Expect(full[3].Extra).To(HaveKeyWithValue("i", BeNumerically("==", 3)))
			Expect(full[3].CreatedAt).NotTo(BeZero())
		}
		short := list(all(connectors.ListOpts{Node: node.Name}))
		Expect(short[0].Extra).To(BeNil(), "default fields leave extra out")
		Expect(short[0].ConnectorID).NotTo(BeEmpty())
		fields := list(all(connectors.ListOpts{Node: node.Name, Fields: []string{"uuid", "extra"}}))
		Expect(fields[0].Type).To(BeEmpty())
		Expect(fields[0].Extra).To(HaveKey("i"))
		desc := list(all(connectors.ListOpts{Node: node.Name, SortKey: "type", SortDir: "desc"}))
		Expect(desc[0].Type).To(Equal("wwpn"))

		up, err := connectors.Update(ctx, c, made["ip"], connectors.UpdateOpts{
			connectors.UpdateOperation{Op: connectors.ReplaceOp, Path: "/connector_id", Value: "192.0.2.77"},
			connectors.UpdateOperation{Op: connectors.AddOp, Path: "/extra/rack", Value: "r9"},
			connectors.UpdateOperation{Op: connectors.RemoveOp, Path: "/extra/i"},
		}).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(up.ConnectorID).To(Equal("192.0.2.77"))
		Expect(up.Extra).To(Equal(map[string]any{"rack": "r9"}))
		Expect(up.UpdatedAt).NotTo(BeNil())

		moved, err := connectors.Update(ctx, c, made["ip"], connectors.UpdateOpts{
			connectors.UpdateOperation{Op: connectors.ReplaceOp, Path: "/node_uuid", Value: other.UUID},
		}).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(moved.NodeUUID).To(Equal(other.UUID))
		Expect(list(byNode(other.Name, connectors.ListOpts{}))).To(HaveLen(2))
		for _, n := range []string{node.UUID, other.UUID} {
			stored, err := store.GetNode(ctx, n)
			Expect(err).NotTo(HaveOccurred())
			Expect(stored.Reservation).To(BeNil(), "both locks released")
		}

		Expect(connectors.Delete(ctx, c, made["ip"]).ExtractErr()).To(Succeed())
		_, err = connectors.Get(ctx, c, made["ip"], nil).Extract()
		isCode(err, 404)
		isCode(connectors.Delete(ctx, c, made["ip"]).ExtractErr(), 404)
	})

	It("creates, shows, lists, patches and deletes targets, masking their credentials", func() {
		props := map[string]any{
			"target_iqn": "iqn.2010-10.org.example:vol-a1b2", "target_portal": "198.51.100.20:3260", "target_lun": 0,
			"auth_method": "CHAP", "auth_username": "node07", "auth_password": secrets[0],
			"discovery": map[string]any{"chap_secret": secrets[1]},
		}
		vt, err := targets.Create(ctx, c, targets.CreateOpts{NodeUUID: node.UUID, VolumeType: "iscsi", BootIndex: 0,
			VolumeID: "a1b2c3d4-e5f6-4711-8899-aabbccddeeff", Properties: props}).Extract()
		Expect(err).NotTo(HaveOccurred())
		expectMasked := func(p map[string]any) {
			GinkgoHelper()
			Expect(p).To(HaveKeyWithValue("auth_password", "******"))
			Expect(p).To(HaveKeyWithValue("auth_username", "node07"))
			Expect(p).To(HaveKeyWithValue("target_iqn", "iqn.2010-10.org.example:vol-a1b2"))
			Expect(p["discovery"]).To(HaveKeyWithValue("chap_secret", "******"))
		}
		expectMasked(vt.Properties)
		second, err := targets.Create(ctx, c, targets.CreateOpts{NodeUUID: node.UUID, VolumeType: "fibre_channel", BootIndex: 1, VolumeID: "v-2"}).Extract()
		Expect(err).NotTo(HaveOccurred())

		got, err := targets.Get(ctx, c, vt.UUID, nil).Extract()
		Expect(err).NotTo(HaveOccurred())
		expectMasked(got.Properties)
		got, err = targets.Get(ctx, c, vt.UUID, targets.GetOpts{Fields: []string{"properties"}}).Extract()
		Expect(err).NotTo(HaveOccurred())
		expectMasked(got.Properties)
		Expect(got.VolumeID).To(BeEmpty())

		pages, err := targets.ListByNode(c, node.Name, targets.ListOpts{Detail: true, Limit: 1}).AllPages(ctx)
		Expect(err).NotTo(HaveOccurred())
		l, err := targets.ExtractTargets(pages)
		Expect(err).NotTo(HaveOccurred())
		Expect(l).To(HaveLen(2))
		expectMasked(l[0].Properties)
		pages, err = targets.List(c, targets.ListOpts{Node: node.UUID, Fields: []string{"uuid", "properties"}}).AllPages(ctx)
		Expect(err).NotTo(HaveOccurred())
		l, err = targets.ExtractTargets(pages)
		Expect(err).NotTo(HaveOccurred())
		expectMasked(l[0].Properties)
		pages, err = targets.List(c, targets.ListOpts{Node: node.UUID, SortKey: "boot_index", SortDir: "desc"}).AllPages(ctx)
		Expect(err).NotTo(HaveOccurred())
		l, err = targets.ExtractTargets(pages)
		Expect(err).NotTo(HaveOccurred())
		Expect(l[0].UUID).To(Equal(second.UUID))
		Expect(l[0].Properties).To(BeNil(), "default fields leave properties out")

		up, err := targets.Update(ctx, c, vt.UUID, targets.UpdateOpts{
			targets.UpdateOperation{Op: targets.ReplaceOp, Path: "/volume_id", Value: "f0e1d2c3-b4a5-4968-8776-655443322110"},
			targets.UpdateOperation{Op: targets.ReplaceOp, Path: "/boot_index", Value: 5},
			targets.UpdateOperation{Op: targets.AddOp, Path: "/properties/controller_password", Value: secrets[2]},
		}).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(up.BootIndex).To(Equal(5))
		Expect(up.Properties).To(HaveKeyWithValue("controller_password", "******"))
		stored, err := store.GetVolumeTarget(ctx, vt.UUID)
		Expect(err).NotTo(HaveOccurred())
		Expect(stored.Properties).To(HaveKeyWithValue("controller_password", secrets[2]), "masking never alters the stored value")

		pages, err = targets.ListDetail(c, targets.ListOpts{Node: node.Name, Limit: 1}).AllPages(ctx)
		Expect(err).NotTo(HaveOccurred(), "GET /v1/volume/targets/detail")
		full, err := targets.ExtractTargets(pages)
		Expect(err).NotTo(HaveOccurred())
		Expect(full).To(HaveLen(2))
		for _, t := range full {
			Expect(t.Properties).NotTo(BeNil(), "/detail lists every field")
		}
		Expect(full[0].Properties).To(HaveKeyWithValue("controller_password", "******"))

		Expect(targets.Delete(ctx, c, second.UUID).ExtractErr()).To(Succeed())
		_, err = targets.Get(ctx, c, second.UUID, nil).Extract()
		isCode(err, 404)
	})

	DescribeTable("refuses invalid requests with Ironic's status and message",
		func(method, path string, body any, code int, msg string) {
			path = strings.ReplaceAll(path, "NODE", node.UUID)
			if b, ok := body.(string); ok {
				body = []byte(strings.ReplaceAll(b, "NODE", node.UUID))
			}
			r := raw(ctx, v32, method, path, body)
			Expect(r.Status).To(Equal(code), string(r.Body))
			Expect(fault(r)).To(ContainSubstring(msg))
		},
		Entry("unknown node on create", http.MethodPost, "/v1/volume/connectors",
			`{"node_uuid": "1be26c0b-03f2-4d2e-ae87-c02d7f33c123", "type": "iqn", "connector_id": "x"}`, 400,
			"Invalid input for field/attribute node_uuid. Value: '1be26c0b-03f2-4d2e-ae87-c02d7f33c123'."),
		Entry("a node name as node_uuid", http.MethodPost, "/v1/volume/targets",
			`{"node_uuid": "some-name", "volume_type": "iscsi", "boot_index": 3, "volume_id": "x"}`, 400, "Expected UUID for node_uuid: some-name"),
		Entry("unknown node filter", http.MethodGet, "/v1/volume/targets?node=ghost-node", nil, 404, "Node ghost-node could not be found."),
		Entry("unknown node path", http.MethodGet, "/v1/nodes/ghost-node/volume/connectors", nil, 404, "Node ghost-node could not be found."),
		Entry("string boot_index", http.MethodPost, "/v1/volume/targets",
			`{"node_uuid": "NODE", "volume_type": "iscsi", "boot_index": "3", "volume_id": "x"}`, 400, "'3' is not of type 'integer'"),
		Entry("numeric type", http.MethodPost, "/v1/volume/connectors",
			`{"node_uuid": "NODE", "type": 7, "connector_id": "x"}`, 400, "7 is not of type 'string'"),
		Entry("extra not an object", http.MethodPost, "/v1/volume/connectors",
			`{"node_uuid": "NODE", "type": "iqn", "connector_id": "x", "extra": [1]}`, 400, "[1] is not of type 'object'"),
		Entry("unknown body field", http.MethodPost, "/v1/volume/connectors",
			`{"node_uuid": "NODE", "type": "iqn", "connector_id": "x", "node_id": 1}`, 400,
			"Schema error for connector: Additional properties are not allowed ('node_id' was unexpected)"),
		Entry("missing field", http.MethodPost, "/v1/volume/targets",
			`{"node_uuid": "NODE", "volume_type": "iscsi", "volume_id": "x"}`, 400, "Schema error for target: 'boot_index' is a required property"),
		Entry("invalid JSON", http.MethodPost, "/v1/volume/targets", `{"node_uuid": `, 400, "Invalid JSON"),
		Entry("unknown list field", http.MethodGet, "/v1/volume/connectors?fields=uuid,secret", nil, 400, "'secret' is not one of"),
		Entry("fields with detail", http.MethodGet, "/v1/volume/connectors?fields=uuid&detail=true", nil, 400, "Can't fetch a subset of fields with 'detail' set"),
		Entry("an unsupported filter", http.MethodGet, "/v1/volume/targets?volume_id=x", nil, 400, "Unexpected arguments: volume_id"),
		Entry("detail on show", http.MethodGet, "/v1/volume/connectors/1be26c0b-03f2-4d2e-ae87-c02d7f33c123?detail=true", nil, 400, "Unexpected arguments: detail"),
		Entry("forbidden sort key", http.MethodGet, "/v1/volume/targets?sort_key=properties", nil, 400, "The sort_key value properties is an invalid field for sorting"),
		Entry("fields on connectors/detail", http.MethodGet, "/v1/volume/connectors/detail?fields=uuid", nil, 400, "Unexpected arguments: fields"),
		Entry("an unknown connector type", http.MethodPost, "/v1/volume/connectors",
			`{"node_uuid": "NODE", "type": "fc", "connector_id": "x"}`, 400,
			"Schema error for connector: 'fc' is not one of ['iqn', 'ip', 'mac', 'wwnn', 'wwpn', 'net-id', 'port', 'portgroup']"),
		Entry("a negative boot_index", http.MethodPost, "/v1/volume/targets",
			`{"node_uuid": "NODE", "volume_type": "iscsi", "boot_index": -1, "volume_id": "x"}`, 400, "-1 is less than the minimum of 0"),
		Entry("unknown connector", http.MethodPatch, "/v1/volume/connectors/1be26c0b-03f2-4d2e-ae87-c02d7f33c123", `[]`, 404,
			"Volume connector 1be26c0b-03f2-4d2e-ae87-c02d7f33c123 could not be found."),
		Entry("write through a node path", http.MethodPost, "/v1/nodes/NODE/volume/targets", `{}`, 400, ""),
	)

	It("refuses invalid patches and changes nothing", func() {
		vc, err := connectors.Create(ctx, c, connectors.CreateOpts{NodeUUID: node.UUID, Type: "iqn", ConnectorID: "iqn.patch-" + node.UUID[:8]}).Extract()
		Expect(err).NotTo(HaveOccurred())
		for patch, msg := range map[string]string{
			`[{"op": "replace", "path": "/uuid", "value": "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"}]`: "Cannot patch /uuid. Only the following can be updated: connector_id, extra, node_uuid, type",
			`[{"op": "remove", "path": "/connector_id"}]`:                                           "'connector_id' is a required property",
			`[{"op": "test", "path": "/type", "value": "iqn"}]`:                                     "Schema error for patch",
			`[{"op": "replace", "path": "/extra/nope", "value": 1}]`:                                "Couldn't apply patch",
			`{"op": "replace"}`: "Schema error for patch",
			`[{"op": "replace", "path": "/node_uuid", "value": "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"}]`: "Unable to apply the requested node_uuid '1be26c0b-03f2-4d2e-ae87-c02d7f33c123'. Requested value was invalid.",
			`[{"op": "replace", "path": "/node_uuid", "value": "a-name"}]`:                               "Expected a UUID for node_uuid, but received a-name.",
		} {
			r := raw(ctx, v32, http.MethodPatch, "/v1/volume/connectors/"+vc.UUID, []byte(patch))
			Expect(r.Status).To(Equal(400), patch)
			Expect(fault(r)).To(ContainSubstring(msg), patch)
		}
		now, err := connectors.Get(ctx, c, vc.UUID, nil).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(now.ConnectorID).To(Equal(vc.ConnectorID))
		Expect(now.UpdatedAt).To(BeNil())
	})

	It("refuses duplicates with 409", func() {
		id := "iqn.dup-" + node.UUID[:8]
		_, err := connectors.Create(ctx, c, connectors.CreateOpts{NodeUUID: node.UUID, Type: "iqn", ConnectorID: id}).Extract()
		Expect(err).NotTo(HaveOccurred())
		other := steps.CreateNode(ctx, c, steps.Name("vol-dup", 0))
		_, err = connectors.Create(ctx, c, connectors.CreateOpts{NodeUUID: other.UUID, Type: "iqn", ConnectorID: id}).Extract()
		isCode(err, 409)
		Expect(err.Error()).To(ContainSubstring("A volume connector with type iqn and connector ID " + id + " already exists."))

		_, err = targets.Create(ctx, c, targets.CreateOpts{NodeUUID: other.UUID, VolumeType: "iscsi", BootIndex: 0, VolumeID: "v"}).Extract()
		Expect(err).NotTo(HaveOccurred())
		_, err = targets.Create(ctx, c, targets.CreateOpts{NodeUUID: other.UUID, VolumeType: "iscsi", BootIndex: 0, VolumeID: "w"}).Extract()
		isCode(err, 409)
		Expect(err.Error()).To(ContainSubstring("A volume target with boot index '0' for the same node already exists."))
		t1, err := targets.Create(ctx, c, targets.CreateOpts{NodeUUID: other.UUID, VolumeType: "iscsi", BootIndex: 1, VolumeID: "w"}).Extract()
		Expect(err).NotTo(HaveOccurred())
		setPower(ctx, other.UUID, "power off")
		_, err = targets.Update(ctx, c, t1.UUID, targets.UpdateOpts{targets.UpdateOperation{Op: targets.ReplaceOp, Path: "/boot_index", Value: 0}}).Extract()
		isCode(err, 409)
	})

	It("refuses updates and deletes while the node is powered on, in manageable too, and deletes once it is off", func() {
		on := powered(steps.Name("vol-on", 0), "power off")
		vc, err := connectors.Create(ctx, c, connectors.CreateOpts{NodeUUID: on.UUID, Type: "iqn", ConnectorID: "iqn.on-" + on.UUID[:8]}).Extract()
		Expect(err).NotTo(HaveOccurred())
		vt, err := targets.Create(ctx, c, targets.CreateOpts{NodeUUID: on.UUID, VolumeType: "iscsi", BootIndex: 0, VolumeID: "v"}).Extract()
		Expect(err).NotTo(HaveOccurred())
		setPower(ctx, on.UUID, "power on")

		r := raw(ctx, v32, http.MethodPatch, "/v1/volume/connectors/"+vc.UUID, []map[string]any{{"op": "add", "path": "/extra/x", "value": 1}})
		Expect(r.Status).To(Equal(400))
		Expect(fault(r)).To(Equal(`The requested action "volume connector update" can not be performed on node "` + on.UUID + `" while it is in state "power on".`))
		r = raw(ctx, v32, http.MethodPatch, "/v1/volume/targets/"+vt.UUID, []map[string]any{{"op": "add", "path": "/extra/x", "value": 1}})
		Expect(fault(r)).To(ContainSubstring(`"volume target update"`))

		// Moving a connector onto a powered-on node is an update of that node.
		mover, err := connectors.Create(ctx, c, connectors.CreateOpts{NodeUUID: node.UUID, Type: "iqn", ConnectorID: "iqn.mover-" + on.UUID[:8]}).Extract()
		Expect(err).NotTo(HaveOccurred())
		_, err = connectors.Update(ctx, c, mover.UUID, connectors.UpdateOpts{connectors.UpdateOperation{Op: connectors.ReplaceOp, Path: "/node_uuid", Value: on.UUID}}).Extract()
		isCode(err, 400)

		Expect(steps.EventuallyStable(ctx, c, on.UUID, nodes.Enroll).ProvisionState).To(Equal("enroll"))
		r = raw(ctx, v32, http.MethodPut, "/v1/nodes/"+on.UUID+"/states/provision", map[string]any{"target": "manage"})
		Expect(r.Status).To(Equal(202), string(r.Body))
		steps.EventuallyStable(ctx, c, on.UUID, nodes.Manageable)
		setPower(ctx, on.UUID, "power on")
		r = raw(ctx, v32, http.MethodDelete, "/v1/volume/connectors/"+vc.UUID, nil)
		Expect(r.Status).To(Equal(400))
		Expect(fault(r)).To(Equal(`The requested action "volume connector deletion" can not be performed on node "` + on.UUID + `" while it is in state "power on".`))
		isCode(targets.Delete(ctx, c, vt.UUID).ExtractErr(), 400)
		_, err = connectors.Get(ctx, c, vc.UUID, nil).Extract()
		Expect(err).NotTo(HaveOccurred(), "the refused delete left the connector")

		setPower(ctx, on.UUID, "power off")
		Expect(connectors.Delete(ctx, c, vc.UUID).ExtractErr()).To(Succeed())
		Expect(targets.Delete(ctx, c, vt.UUID).ExtractErr()).To(Succeed())
	})

	It("answers 409 after bounded retries while another conductor holds the node lock", func() {
		vc, err := connectors.Create(ctx, c, connectors.CreateOpts{NodeUUID: node.UUID, Type: "iqn", ConnectorID: "iqn.locked-" + node.UUID[:8]}).Extract()
		Expect(err).NotTo(HaveOccurred())
		_, err = store.ReserveNode(ctx, node.UUID, "ghost-conductor", 1)
		Expect(err).NotTo(HaveOccurred())
		released := false
		defer func() {
			if !released {
				_ = store.ReleaseNode(ctx, node.UUID, "ghost-conductor", 1)
			}
		}()
		start := time.Now()
		r := raw(ctx, v32, http.MethodDelete, "/v1/volume/connectors/"+vc.UUID, nil)
		Expect(r.Status).To(Equal(409))
		Expect(fault(r)).To(Equal("Node " + node.UUID + " is locked by host ghost-conductor, please retry after the current operation is completed."))
		Expect(time.Since(start)).To(BeNumerically(">=", 500*time.Millisecond), "the conductor retried before giving up")
		_, err = connectors.Update(ctx, c, vc.UUID, connectors.UpdateOpts{connectors.UpdateOperation{Op: connectors.AddOp, Path: "/extra/a", Value: 1}}).Extract()
		isCode(err, 409)
		Expect(store.ReleaseNode(ctx, node.UUID, "ghost-conductor", 1)).To(Succeed())
		released = true
		Expect(connectors.Delete(ctx, c, vc.UUID).ExtractErr()).To(Succeed())
	})

	It("lets exactly one of 50 concurrent creates of one connector through", func() {
		id := "iqn.race-" + node.UUID[:8]
		codes := make([]int, 50)
		var wg sync.WaitGroup
		for i := range codes {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				codes[i] = raw(ctx, v32, http.MethodPost, "/v1/volume/connectors",
					map[string]any{"node_uuid": node.UUID, "type": "iqn", "connector_id": id}).Status
			}()
		}
		wg.Wait()
		count := map[int]int{}
		for _, code := range codes {
			count[code]++
		}
		Expect(count).To(Equal(map[int]int{201: 1, 409: 49}))
		pages, err := connectors.List(c, connectors.ListOpts{Node: node.UUID}).AllPages(ctx)
		Expect(err).NotTo(HaveOccurred())
		l, err := connectors.ExtractConnectors(pages)
		Expect(err).NotTo(HaveOccurred())
		n := 0
		for _, vc := range l {
			if vc.ConnectorID == id {
				n++
			}
		}
		Expect(n).To(Equal(1))
	})

	It("ends 50 concurrent patches of one node's targets consistent, none lost", func() {
		busy := powered(steps.Name("vol-busy", 0), "power off")
		uuids := make([]string, 50)
		for i := range uuids {
			vt, err := targets.Create(ctx, c, targets.CreateOpts{NodeUUID: busy.UUID, VolumeType: "iscsi", BootIndex: i, VolumeID: fmt.Sprintf("v-%d", i)}).Extract()
			Expect(err).NotTo(HaveOccurred())
			uuids[i] = vt.UUID
		}
		var wg sync.WaitGroup
		final := make([]int, len(uuids))
		for i := range uuids {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				// A client answered 409 (lock busy) or 503 (broker
				// reconnecting) retries, as both answers ask; the patch
				// is idempotent.
				for try := 0; try < 200; try++ {
					final[i] = raw(ctx, v32, http.MethodPatch, "/v1/volume/targets/"+uuids[i], []map[string]any{
						{"op": "add", "path": "/extra/writer", "value": i},
						{"op": "replace", "path": "/volume_id", "value": fmt.Sprintf("patched-%d", i)},
					}).Status
					if final[i] != http.StatusConflict && final[i] != http.StatusServiceUnavailable {
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
			}()
		}
		wg.Wait()
		for i, code := range final {
			Expect(code).To(Equal(200), "patch %d", i)
		}
		pages, err := targets.ListByNode(c, busy.UUID, targets.ListOpts{Detail: true}).AllPages(ctx)
		Expect(err).NotTo(HaveOccurred())
		l, err := targets.ExtractTargets(pages)
		Expect(err).NotTo(HaveOccurred())
		Expect(l).To(HaveLen(50))
		for _, t := range l {
			Expect(t.VolumeID).To(Equal(fmt.Sprintf("patched-%d", t.BootIndex)))
			Expect(t.Extra).To(HaveKeyWithValue("writer", BeNumerically("==", t.BootIndex)))
		}
		stored, err := store.GetNode(ctx, busy.UUID)
		Expect(err).NotTo(HaveOccurred())
		Expect(stored.Reservation).To(BeNil())
	})

	It("validates the cinder storage interface at 1.33", func() {
		cn := powered(steps.Name("vol-cinder", 0), "power off")
		r := raw(ctx, v33, http.MethodPatch, "/v1/nodes/"+cn.UUID, []map[string]any{{"op": "replace", "path": "/storage_interface", "value": "cinder"}})
		Expect(r.Status).To(Equal(200), string(r.Body))
		storage := func() map[string]any {
			GinkgoHelper()
			var v map[string]map[string]any
			Expect(json.Unmarshal(raw(ctx, v33, http.MethodGet, "/v1/nodes/"+cn.UUID+"/validate", nil).Body, &v)).To(Succeed())
			return v["storage"]
		}
		Expect(storage()).To(HaveKeyWithValue("result", true))
		_, err := targets.Create(ctx, c, targets.CreateOpts{NodeUUID: cn.UUID, VolumeType: "fibre_channel", BootIndex: 0, VolumeID: "v"}).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(storage()["reason"]).To(ContainSubstring("no wwpn and wwnn volume connector"))
		_, err = connectors.Create(ctx, c, connectors.CreateOpts{NodeUUID: cn.UUID, Type: "wwpn", ConnectorID: "21:00:" + cn.UUID[:8]}).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(storage()["reason"]).To(ContainSubstring("1 wwpn and 0 wwnn"))
		_, err = connectors.Create(ctx, c, connectors.CreateOpts{NodeUUID: cn.UUID, Type: "wwnn", ConnectorID: "20:00:" + cn.UUID[:8]}).Extract()
		Expect(err).NotTo(HaveOccurred())
		Expect(storage()["reason"]).To(ContainSubstring("fibre_channel_boot:true"))
		r = raw(ctx, v33, http.MethodPatch, "/v1/nodes/"+cn.UUID, []map[string]any{{"op": "add", "path": "/properties/capabilities", "value": "fibre_channel_boot:true"}})
		Expect(r.Status).To(Equal(200), string(r.Body))
		Expect(storage()).To(HaveKeyWithValue("result", true))
	})

	It("round-trips connectors and targets through ferricctl", func() {
		cli := func(args ...string) string {
			GinkgoHelper()
			cmd := exec.Command(ferricctl, append([]string{"--os-baremetal-api-version", v32}, args...)...)
			cmd.Env = append(os.Environ(), "OS_ENDPOINT="+apiURL, "OS_AUTH_TYPE=none")
			out, err := cmd.CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), "ferricctl %v: %s", args, out)
			bodies.add(out)
			return string(out)
		}
		var vc map[string]any
		Expect(json.Unmarshal([]byte(cli("volume", "connector", "create", "--node", node.UUID, "--type", "iqn",
			"--connector-id", "iqn.cli-"+node.UUID[:8], "--extra", "rack=r1", "-f", "json")), &vc)).To(Succeed())
		id := vc["uuid"].(string)
		Expect(cli("volume", "connector", "list", "--node", node.Name)).To(ContainSubstring(id))
		Expect(cli("volume", "connector", "show", id, "-f", "json")).To(ContainSubstring(`"rack": "r1"`))
		cli("volume", "connector", "set", id, "--connector-id", "iqn.cli2-"+node.UUID[:8], "--extra", "row=7")
		Expect(cli("volume", "connector", "show", id, "-f", "json")).To(ContainSubstring("iqn.cli2-"))
		cli("volume", "connector", "unset", id, "--extra", "rack")
		Expect(cli("volume", "connector", "show", id, "-f", "json")).NotTo(ContainSubstring("rack"))
		cli("volume", "connector", "delete", id)
		_, err := connectors.Get(ctx, c, id, nil).Extract()
		isCode(err, 404)

		var vt map[string]any
		Expect(json.Unmarshal([]byte(cli("volume", "target", "create", "--node", node.UUID, "--type", "iscsi", "--boot-index", "9",
			"--volume-id", "cli-vol", "--property", "auth_password="+secrets[0], "--property", "target_lun=3", "-f", "json")), &vt)).To(Succeed())
		tid := vt["uuid"].(string)
		Expect(vt["properties"]).To(HaveKeyWithValue("auth_password", "******"))
		Expect(cli("volume", "target", "list", "--node", node.UUID, "--long")).To(ContainSubstring(tid))
		cli("volume", "target", "set", tid, "--volume-id", "cli-vol-2", "--property", "target_portal=198.51.100.1:3260")
		out := cli("volume", "target", "show", tid, "-f", "json")
		Expect(out).To(ContainSubstring("cli-vol-2"))
		Expect(out).To(ContainSubstring("198.51.100.1:3260"))
		cli("volume", "target", "unset", tid, "--property", "target_portal")
		Expect(cli("volume", "target", "show", tid, "-f", "json")).NotTo(ContainSubstring("target_portal"))
		cli("volume", "target", "delete", tid)
		_, err = targets.Get(ctx, c, tid, nil).Extract()
		isCode(err, 404)
	})

	It("keeps a fake-deployed node's targets through undeploy, and deletes them afterwards with 204, as Ironic does", func() {
		dn := steps.CreateNode(ctx, c, steps.Name("vol-deploy", 0))
		vc, err := connectors.Create(ctx, c, connectors.CreateOpts{NodeUUID: dn.UUID, Type: "iqn", ConnectorID: "iqn.deploy-" + dn.UUID[:8]}).Extract()
		Expect(err).NotTo(HaveOccurred())
		vt, err := targets.Create(ctx, c, targets.CreateOpts{NodeUUID: dn.UUID, VolumeType: "iscsi", BootIndex: 0, VolumeID: "boot"}).Extract()
		Expect(err).NotTo(HaveOccurred())
		steps.Lifecycle(ctx, c, dn.UUID)
		pages, err := targets.ListByNode(c, dn.UUID, nil).AllPages(ctx)
		Expect(err).NotTo(HaveOccurred())
		l, err := targets.ExtractTargets(pages)
		Expect(err).NotTo(HaveOccurred())
		Expect(l).To(ConsistOf(HaveField("UUID", vt.UUID)))
		_, err = connectors.Get(ctx, c, vc.UUID, nil).Extract()
		Expect(err).NotTo(HaveOccurred())
		r := raw(ctx, v32, http.MethodDelete, "/v1/volume/targets/"+vt.UUID, nil)
		Expect(r.Status).To(Equal(http.StatusNoContent), string(r.Body))
	})

	It("never lets a target secret out, in any response body or any log line", func() {
		all := bodies.String()
		Expect(all).To(ContainSubstring("******"), "the suite did read masked properties")
		for _, s := range secrets {
			Expect(all).NotTo(ContainSubstring(s))
		}
		procs := deployment.Processes()
		Expect(procs).NotTo(BeEmpty())
		for _, p := range procs {
			log, err := os.ReadFile(p.LogPath)
			Expect(err).NotTo(HaveOccurred())
			Expect(log).NotTo(BeEmpty(), p.Name)
			for _, s := range secrets {
				Expect(string(log)).NotTo(ContainSubstring(s), p.Name)
			}
		}
	})
})

// setPower asks for a power state and waits until the node reports it.
func setPower(ctx context.Context, uuid, state string) {
	GinkgoHelper()
	r := raw(ctx, v32, http.MethodPut, "/v1/nodes/"+uuid+"/states/power", map[string]any{"target": state})
	Expect(r.Status).To(Equal(202), string(r.Body))
	Eventually(func() string {
		var n struct {
			PowerState       *string `json:"power_state"`
			TargetPowerState *string `json:"target_power_state"`
		}
		Expect(json.Unmarshal(raw(ctx, v32, http.MethodGet, "/v1/nodes/"+uuid, nil).Body, &n)).To(Succeed())
		if n.PowerState == nil || n.TargetPowerState != nil {
			return ""
		}
		return *n.PowerState
	}).WithTimeout(steps.StateTimeout).WithPolling(100 * time.Millisecond).Should(Equal(state))
}
