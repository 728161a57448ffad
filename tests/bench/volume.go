package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"

	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/model"
)

var (
	volumeCreates = flag.Int("volume-creates", 3000, "POST /v1/volume/{connectors,targets} requests each")
)

// volumeTarget is the rate each volume measurement should reach.
const volumeTarget = 1000

// benchVolume gives every seeded node one connector and one target in
// MySQL, then measures the volume lists and creates. The detailed target
// list is measured as ?detail=true, which Ironic serves too (its
// /v1/volume/targets/detail is a 400; Ferric's serves the same list).
func benchVolume(ctx context.Context, api *apiClient, reads *reader, store *db.Store, seeded []string, concurrency int) ([]row, error) {
	fmt.Printf("seeding a volume connector and a volume target on %d nodes ...\n", len(seeded))
	res := measure(ctx, len(seeded), concurrency, func(ctx context.Context, i int) error {
		n, err := store.GetNode(ctx, seeded[i])
		if err != nil {
			return err
		}
		if err := store.CreateVolumeConnector(ctx, &model.VolumeConnector{NodeID: n.ID, Type: "iqn",
			ConnectorID: fmt.Sprintf("iqn.2026-01.bench:seed-%d", i), Extra: model.JSONObject{}}); err != nil {
			return err
		}
		return store.CreateVolumeTarget(ctx, &model.VolumeTarget{NodeID: n.ID, VolumeType: "iscsi", BootIndex: 0,
			VolumeID: fmt.Sprintf("seed-%d", i), Extra: model.JSONObject{},
			Properties: model.JSONObject{"target_iqn": fmt.Sprintf("iqn.2026-01.bench:vol-%d", i), "target_lun": 0,
				"auth_method": "CHAP", "auth_username": "bench", "auth_password": "bench-secret"}})
	})
	if res.errors > 0 {
		return nil, fmt.Errorf("seeding volumes: %d failed, first: %w", res.errors, res.firstErr)
	}

	markers := func(collection string) ([]string, error) {
		var page map[string]json.RawMessage
		if err := api.do(ctx, http.MethodGet, "/v1/volume/"+collection+"?fields=uuid", nil, http.StatusOK, &page); err != nil {
			return nil, err
		}
		var items []struct {
			UUID string `json:"uuid"`
		}
		if err := json.Unmarshal(page[collection], &items); err != nil {
			return nil, err
		}
		var out []string
		for _, it := range items {
			out = append(out, it.UUID)
		}
		if len(out) <= 100 {
			return nil, fmt.Errorf("only %d %s listed", len(out), collection)
		}
		return out, nil
	}
	listPages := func(name, collection, query string) (row, error) {
		ordered, err := markers(collection)
		if err != nil {
			return row{}, err
		}
		fmt.Printf("GET %s ...\n", name)
		res, err := reads.read(ctx, "GET "+name, pagePaths("/v1/volume/"+collection+"?"+query, ordered),
			func(ctx context.Context, path string) error {
				var page volumePage
				if err := api.do(ctx, http.MethodGet, path, nil, http.StatusOK, &page); err != nil {
					return err
				}
				if n := page.items(collection); n != 100 {
					return fmt.Errorf("GET %s: page of %d %s, want 100", path, n, collection)
				}
				return nil
			})
		return volumeRow("GET "+name, res), err
	}

	var rows []row
	r, err := listPages("/v1/volume/connectors?limit=100", "connectors", "limit=100")
	if err != nil {
		return nil, err
	}
	rows = append(rows, r)
	if r, err = listPages("/v1/volume/targets?detail=true&limit=100", "targets", "detail=true&limit=100"); err != nil {
		return nil, err
	}
	rows = append(rows, r)

	fmt.Println("GET /v1/nodes/{uuid}/volume/targets ...")
	scoped := make([]string, len(seeded))
	for i := range scoped {
		scoped[i] = "/v1/nodes/" + seeded[(i*31)%len(seeded)] + "/volume/targets"
	}
	res, err = reads.read(ctx, "GET /v1/nodes/{uuid}/volume/targets", scoped, func(ctx context.Context, path string) error {
		var page volumePage
		if err := api.do(ctx, http.MethodGet, path, nil, http.StatusOK, &page); err != nil {
			return err
		}
		if n := page.items("targets"); n != 1 {
			return fmt.Errorf("GET %s: %d targets, want 1", path, n)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rows = append(rows, volumeRow("GET /v1/nodes/{uuid}/volume/targets", res))

	fmt.Println("POST /v1/volume/connectors ...")
	res = measure(ctx, *volumeCreates, concurrency, func(ctx context.Context, i int) error {
		return api.do(ctx, http.MethodPost, "/v1/volume/connectors", map[string]any{
			"node_uuid": seeded[i%len(seeded)], "type": "wwpn", "connector_id": fmt.Sprintf("21:00:bench:%08d", i),
		}, http.StatusCreated, nil)
	})
	rows = append(rows, volumeRow("POST /v1/volume/connectors (create)", res))

	fmt.Println("POST /v1/volume/targets ...")
	res = measure(ctx, *volumeCreates, concurrency, func(ctx context.Context, i int) error {
		return api.do(ctx, http.MethodPost, "/v1/volume/targets", map[string]any{
			"node_uuid": seeded[i%len(seeded)], "volume_type": "iscsi", "boot_index": 1 + i/len(seeded),
			"volume_id": fmt.Sprintf("bench-%d", i), "properties": map[string]any{"target_lun": i},
		}, http.StatusCreated, nil)
	})
	rows = append(rows, volumeRow("POST /v1/volume/targets (create)", res))
	return rows, nil
}

// volumePage is a volume list answer; decoding its items as empty structs
// checks that each is an object.
type volumePage struct {
	Connectors []struct{} `json:"connectors"`
	Targets    []struct{} `json:"targets"`
}

func (p volumePage) items(collection string) int {
	if collection == "targets" {
		return len(p.Targets)
	}
	return len(p.Connectors)
}

func volumeRow(name string, res result) row {
	v := "yes"
	switch {
	case res.errors > 0:
		v = "NO (errors)"
	case res.rate() < volumeTarget:
		v = "NO"
	}
	return row{name, res.String(), fmt.Sprintf("≥ %d/s", volumeTarget), v}
}
