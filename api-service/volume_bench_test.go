package apiservice_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/ferricbm/ferric/pkg/model"
)

// seedVolumes gives n nodes one connector and one target each and returns
// the node UUIDs.
func seedVolumes(b *testing.B, e *env, n int) []string {
	ctx := context.Background()
	uuids := make([]string, n)
	for i := range uuids {
		uuids[i] = e.createNode("")
		node, err := e.store.GetNode(ctx, uuids[i])
		if err != nil {
			b.Fatal(err)
		}
		if err := e.store.CreateVolumeConnector(ctx, &model.VolumeConnector{NodeID: node.ID, Type: "iqn",
			ConnectorID: fmt.Sprintf("iqn.bench-%d", i), Extra: model.JSONObject{}}); err != nil {
			b.Fatal(err)
		}
		if err := e.store.CreateVolumeTarget(ctx, &model.VolumeTarget{NodeID: node.ID, VolumeType: "iscsi", VolumeID: "v",
			Extra: model.JSONObject{}, Properties: model.JSONObject{"target_iqn": "iqn.t", "auth_password": "pw", "target_lun": 1}}); err != nil {
			b.Fatal(err)
		}
	}
	return uuids
}

// BenchmarkListVolumeConnectors100 and BenchmarkListVolumeTargetsDetail100
// read pages of 100 after a marker, as make bench does.
func BenchmarkListVolumeConnectors100(b *testing.B) {
	backends(b, func(b *testing.B, e *env) {
		seedVolumes(b, e, 200)
		markers := volumeMarkers(b, e, "connectors")
		measure(b, func(i int) response {
			return e.at("1.32", http.MethodGet, "/v1/volume/connectors?limit=100&marker="+markers[i%len(markers)], "")
		}, http.StatusOK)
	})
}

func BenchmarkListVolumeTargetsDetail100(b *testing.B) {
	backends(b, func(b *testing.B, e *env) {
		seedVolumes(b, e, 200)
		markers := volumeMarkers(b, e, "targets")
		measure(b, func(i int) response {
			return e.at("1.32", http.MethodGet, "/v1/volume/targets?detail=true&limit=100&marker="+markers[i%len(markers)], "")
		}, http.StatusOK)
	})
}

// volumeMarkers lists the UUIDs of a volume collection in the API's order
// that have at least 100 items after them.
func volumeMarkers(b *testing.B, e *env, collection string) []string {
	r := e.at("1.32", http.MethodGet, "/v1/volume/"+collection+"?fields=uuid", "")
	mustStatus(b, r, http.StatusOK)
	items := r.json()[collection].([]any)
	var out []string
	for _, it := range items[:len(items)-100] {
		out = append(out, it.(map[string]any)["uuid"].(string))
	}
	return out
}

func BenchmarkListNodeVolumeTargets(b *testing.B) {
	backends(b, func(b *testing.B, e *env) {
		nodes := seedVolumes(b, e, 20)
		measure(b, func(i int) response {
			return e.at("1.32", http.MethodGet, "/v1/nodes/"+nodes[i%len(nodes)]+"/volume/targets", "")
		}, http.StatusOK)
	})
}

func BenchmarkCreateVolumeConnector(b *testing.B) {
	backends(b, func(b *testing.B, e *env) {
		node := e.createNode("")
		i := 0
		for b.Loop() {
			i++
			body := fmt.Sprintf(`{"node_uuid": %q, "type": "wwpn", "connector_id": "21:00:%d"}`, node, i)
			mustStatus(b, e.at("1.32", http.MethodPost, "/v1/volume/connectors", body), http.StatusCreated)
		}
	})
}
