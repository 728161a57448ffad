package apiservice_test

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ferricbm/ferric/api-service/apitest"
)

// action is a request decoder outside create and PATCH: a node action, a
// ramdisk callback or the lookup query. "NODE" in path is the node's UUID;
// query actions take the fuzzed input as their query string.
type action struct {
	method, path string
	query        bool
	seeds        []string
}

var actions = []action{
	{http.MethodPut, "/v1/nodes/NODE/states/provision", false, []string{`{"target": "manage"}`,
		`{"target": "clean", "clean_steps": [{"interface": "deploy", "step": "erase_devices", "args": {"n": 1e400}}]}`,
		`{"target": "active", "configdrive": {"meta_data": {"a": [1, 2]}, "user_data": "x"}}`,
		`{"target": "active", "configdrive": "H4sIAAAAAAAAAwMAAAAAAAAAAAA="}`, `{"target": "rebuild", "configdrive": 7}`,
		`{"target": "rescue", "rescue_password": ""}`, `{"target": ["manage"]}`}},
	{http.MethodPut, "/v1/nodes/NODE/states/power", false, []string{`{"target": "power on"}`, `{"target": "rebooting", "timeout": -1}`,
		`{"target": "power off", "timeout": 1e400}`}},
	{http.MethodPut, "/v1/nodes/NODE/states/raid", false, []string{`{"logical_disks": [{"size_gb": 100, "raid_level": "1"}]}`,
		`{"logical_disks": [{"size_gb": "MAX", "raid_level": 5, "is_root_volume": "yes"}]}`, `{"logical_disks": {}}`}},
	{http.MethodPut, "/v1/nodes/NODE/states/console", false, []string{`{"enabled": true}`, `{"enabled": "maybe"}`}},
	{http.MethodPut, "/v1/nodes/NODE/management/boot_device", false, []string{`{"boot_device": "pxe", "persistent": true}`,
		`{"boot_device": "disk", "persistent": "x"}`, `{"boot_device": null}`}},
	{http.MethodPut, "/v1/nodes/NODE/management/inject_nmi", false, []string{`{}`, `{"a": 1}`}},
	{http.MethodPut, "/v1/nodes/NODE/maintenance", false, []string{`{"reason": "r"}`, `{"reason": 1e400}`, `{"reason": "` + strings.Repeat("r", 300) + `"}`}},
	{http.MethodPost, "/v1/nodes/NODE/vifs", false, []string{`{"id": "1974dcfa-836f-41b2-b541-686c100900e5"}`, `{"id": {"a": 1}}`, `{}`}},
	{http.MethodPut, "/v1/nodes/NODE/traits", false, []string{`{"traits": ["CUSTOM_A", "HW_CPU_X86_VMX"]}`, `{"traits": ["lower"]}`, `{"traits": "CUSTOM_A"}`}},
	{http.MethodPost, "/v1/nodes/NODE/vendor_passthru?method=pass_deploy_info", false, []string{
		`{"key": "k", "address": "10.0.0.2", "iqn": "iqn.2008-10.org.openstack:x", "port": "3260", "lun": "1"}`,
		`{"key": 1e400, "address": ["a"], "chap_username": "u"}`}},
	{http.MethodPost, "/v1/nodes/NODE/vendor_passthru?method=pass_bootloader_install_info", false, []string{
		`{"key": "k", "address": "10.0.0.2", "status": "SUCCEEDED", "chap_secret": "s"}`, `{"status": {}}`}},
	{http.MethodPost, "/v1/heartbeat/NODE", false, []string{`{"callback_url": "http://10.0.0.2:9999", "agent_version": "6.1.0"}`,
		`{"callback_url": "file:///etc/shadow", "agent_token": 1}`, `{"callback_url": "http://[::1"}`}},
	{http.MethodGet, "/v1/lookup", true, []string{"addresses=52:54:00:00:00:aa", "node_uuid=NODE", "addresses=", "addresses=x&node_uuid=y", "%zz"}},
}

// FuzzActionBodies sends any body to every node action and ramdisk
// endpoint (any query to lookup), on a node of its own: it is answered or
// refused with a 4xx, never a 5xx, and a refusal leaves the node as it was.
func FuzzActionBodies(f *testing.F) {
	for i, a := range actions {
		for _, s := range a.seeds {
			f.Add(uint8(i), s)
		}
	}
	e := newEnv(f, apitest.SQLite(f), nil)
	f.Fuzz(func(t *testing.T, which uint8, input string) {
		a := actions[int(which)%len(actions)]
		node := e.createNode("")
		item := "/v1/nodes/" + node
		path, body := strings.ReplaceAll(a.path, "NODE", node), input
		if a.query {
			path, body = path+"?"+strings.ReplaceAll(input, "NODE", node), ""
			if _, err := url.ParseRequestURI(e.url + path); err != nil {
				return
			}
		}
		before := e.at("latest", http.MethodGet, item, "")
		r := e.at("latest", a.method, path, body)
		if r.status >= 500 || r.status < 200 {
			t.Fatalf("%s %s %q answered %d: %s", a.method, path, body, r.status, r.raw)
		}
		if r.status >= 400 {
			if after := e.at("latest", http.MethodGet, item, ""); !bytes.Equal(after.raw, before.raw) {
				t.Fatalf("%s %s %q was refused (%d: %s) but changed the node:\nbefore %s\nafter  %s",
					a.method, path, body, r.status, r.raw, before.raw, after.raw)
			}
		}
	})
}
