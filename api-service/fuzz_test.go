package apiservice_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ferricbm/ferric/api-service/apitest"
	"github.com/ferricbm/ferric/pkg/states"
)

// FuzzWrites sends a create body and then a PATCH document to one of the
// writable resources. Whatever the API accepts must read back, list, patch
// and delete; whatever it refuses must be refused with a 4xx and leave the
// lists readable. "NODE" in a body is the owning node's UUID.
func FuzzWrites(f *testing.F) {
	for i, w := range writables {
		r := uint8(i)
		f.Add(r, strings.ReplaceAll(w.body, "EXTRA", `{}`), `[{"op": "add", "path": "/extra/a", "value": {"b": [1, 2.5e10, null]}}]`)
		f.Add(r, strings.ReplaceAll(w.body, "EXTRA", `{"n": 1e400}`), `[]`)
		f.Add(r, strings.ReplaceAll(w.body, "EXTRA", `{"a": "\u00e9\"}"}`), `[{"op": "replace", "path": "/extra/a", "value": -1e999}]`)
		f.Add(r, strings.ReplaceAll(w.body, "EXTRA", `{"a": 1}`), `[{"op": "remove", "path": "/extra/a"}]`)
		f.Add(r, strings.ReplaceAll(w.body, "EXTRA", `[]`), `{"op": "add"}`)
	}
	f.Add(uint8(0), `{"driver": "fake-hardware", "name": "n1", "properties": {"cpus": 4}, "description": "d"}`,
		`[{"op": "add", "path": "/protected_reason", "value": "x"}, {"op": "replace", "path": "/name", "value": "n2"}]`)
	f.Add(uint8(0), `{"driver": "fake-hardware", "instance_info": {"image_source": 1E+308}}`, `[{"op": "add", "path": "/maintenance", "value": true}]`)
	f.Add(uint8(2), `{"node_uuid": "NODE", "address": "52:54:00:00:00:02", "local_link_connection": {"switch_id": "0a:1b:2c:3d:4e:5f", "port_id": "p"}}`,
		`[{"op": "replace", "path": "/pxe_enabled", "value": false}]`)

	e := newEnv(f, apitest.SQLite(f), nil)
	node := e.createNode(`, "name": "fuzz-owner"`)
	// Volume writes need the owner powered off, as a power sync records it.
	n, err := e.store.GetNode(context.Background(), node)
	if err != nil {
		f.Fatalf("get owner: %v", err)
	}
	off := states.PowerOff
	n.PowerState = &off
	if err := e.store.SaveNode(context.Background(), n); err != nil {
		f.Fatalf("power off owner: %v", err)
	}

	f.Fuzz(func(t *testing.T, which uint8, body, patch string) {
		w := writables[int(which)%len(writables)]
		body = strings.ReplaceAll(body, "NODE", node)
		created := e.at("latest", http.MethodPost, w.collection, body)
		lists := func(when string) {
			for _, list := range []string{w.collection, w.detail()} {
				if r := e.at("latest", http.MethodGet, list, ""); r.status != http.StatusOK {
					t.Fatalf("%s: GET %s answered %d: %s", when, list, r.status, r.raw)
				}
			}
		}
		if created.status != http.StatusCreated {
			if created.status < 400 || created.status >= 500 {
				t.Fatalf("POST %s %q answered %d: %s", w.collection, body, created.status, created.raw)
			}
			lists("after a refused create")
			return
		}
		uuid := readBack(t, created)
		item := w.collection + "/" + uuid
		readBack(t, e.at("latest", http.MethodGet, item, ""))
		lists("after create")

		patched := e.at("latest", http.MethodPatch, item, patch)
		switch {
		case patched.status == http.StatusOK:
			readBack(t, patched)
			readBack(t, e.at("latest", http.MethodGet, item, ""))
		case patched.status < 400 || patched.status >= 500:
			t.Fatalf("PATCH %s %q answered %d: %s", item, patch, patched.status, patched.raw)
		}
		lists("after patch")

		if r := e.at("latest", http.MethodDelete, item, ""); r.status != http.StatusNoContent {
			t.Fatalf("DELETE %s answered %d: %s", item, r.status, r.raw)
		}
		if r := e.at("latest", http.MethodGet, item, ""); r.status != http.StatusNotFound {
			t.Fatalf("GET %s after delete answered %d: %s", item, r.status, r.raw)
		}
	})
}

// readBack checks that r is a 2xx JSON object (numbers kept as literals,
// so one beyond float64 still parses) and returns its uuid.
func readBack(t *testing.T, r response) string {
	t.Helper()
	if r.status < 200 || r.status >= 300 {
		t.Fatalf("answered %d: %s", r.status, r.raw)
	}
	dec := json.NewDecoder(bytes.NewReader(r.raw))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		t.Fatalf("answer is not a JSON object: %v: %s", err, r.raw)
	}
	uuid, _ := obj["uuid"].(string)
	if uuid == "" {
		t.Fatalf("answer has no uuid: %s", r.raw)
	}
	return uuid
}

// FuzzListQuery sends any query string to every list: it is answered or
// refused with a 4xx, never a 5xx.
func FuzzListQuery(f *testing.F) {
	for _, q := range []string{"", "limit=1&marker=x", "fields=uuid,extra", "sort_key=name&sort_dir=desc", "detail=True",
		"driver=fake-hardware&maintenance=true", "associated=maybe", "limit=-1", "fields=", "a;b=1", "%zz=1", "node=fuzz-owner"} {
		f.Add(uint8(0), q)
	}
	e := newEnv(f, apitest.SQLite(f), nil)
	node := e.createNode(`, "name": "fuzz-owner", "extra": {"a": 1}`)
	f.Fuzz(func(t *testing.T, which uint8, query string) {
		w := writables[int(which)%len(writables)]
		query = strings.ReplaceAll(query, "NODE", node)
		for _, list := range []string{w.collection, w.detail()} {
			sep := "?"
			if strings.Contains(list, "?") {
				sep = "&"
			}
			req := list + sep + query
			if _, err := url.ParseRequestURI(e.url + req); err != nil {
				return
			}
			if r := e.at("latest", http.MethodGet, req, ""); r.status >= 500 || r.status < 200 {
				t.Fatalf("GET %s answered %d: %s", req, r.status, r.raw)
			}
		}
	})
}
