package nodes_test

import (
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/nodes"
	"github.com/ferricbm/ferric/pkg/states"
)

var _ = Describe("View.AppendJSON", func() {
	// busyNode sets every kind of value Render handles: masked dicts and
	// free text, HTML and non-ASCII characters, timestamps, traits, NULLs.
	busyNode := func() *model.Node {
		n := storedNode()
		updated := time.Date(2026, 5, 2, 1, 2, 3, 4000, time.UTC)
		n.UpdatedAt = &updated
		n.ProvisionUpdatedAt = &updated
		n.ProvisionState = ptr(string(states.InspectWait))
		n.LastError = ptr(`deploy failed: password=hunter2 <b>&"é"</b>`)
		n.Description = ptr("rack 4 \u2028 line\tsep \xff")
		n.Extra = model.JSONObject{"a": []any{1.5, "x<y", map[string]any{"token": "t"}}, "b": nil}
		n.Properties = model.JSONObject{"cpus": 8.0, "memory_mb": 4096.0}
		n.Traits = model.StringList{"CUSTOM_A", "CUSTOM_B"}
		n.AutomatedClean = ptr(true)
		n.Maintenance = true
		return n
	}

	versions := []microversion.Version{microversion.Min, microversion.V1(2), microversion.V1(11),
		microversion.StatesLink, microversion.PortgroupLinks, microversion.VolumeAPI, microversion.V1(39), microversion.Max}

	It("writes exactly what encoding/json writes for Render", func() {
		for _, n := range []*model.Node{storedNode(), busyNode(), {UUID: "5d1e7c4a-6f0a-4c1e-9d3b-2b3a9e8f1c00"}} {
			for _, v := range versions {
				for _, fields := range [][]string{nil, nodes.DefaultListFields, {"driver_info", "last_error", "extra"}, {"uuid"}} {
					vw := nodes.View{Version: v, Base: "http://api:6385", Fields: fields}
					want, err := json.Marshal(vw.Render(n))
					Expect(err).NotTo(HaveOccurred())
					got, err := vw.AppendJSON([]byte("prefix"), n)
					Expect(err).NotTo(HaveOccurred())
					Expect(string(got)).To(Equal("prefix"+string(want)), "version %s, fields %v", v, fields)
				}
			}
		}
	})
})
