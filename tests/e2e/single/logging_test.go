package single_test

import (
	"bufio"
	"encoding/json"
	"os"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/e2e/steps"
)

// logLines parses the server's log, failing on any line that is not one
// JSON object.
func logLines() []map[string]any {
	GinkgoHelper()
	f, err := os.Open(serve.LogPath)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		Expect(json.Unmarshal(sc.Bytes(), &m)).To(Succeed(), "log line %q", sc.Text())
		out = append(out, m)
	}
	Expect(sc.Err()).NotTo(HaveOccurred())
	return out
}

var _ = Describe("JSON logs", func() {
	It("carry a caller's X-Openstack-Request-Id as the global id, beside the API's own, into the conductor's work on the node", func(ctx SpecContext) {
		n := steps.CreateNode(ctx, client, steps.Name("reqid", 0))
		const global = "req-6a1f0c2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b"
		tagged := *client
		tagged.MoreHeaders = map[string]string{"X-Openstack-Request-Id": global}
		res := nodes.ChangeProvisionState(ctx, &tagged, n.UUID, nodes.ProvisionStateOpts{Target: nodes.TargetManage})
		Expect(res.Err).NotTo(HaveOccurred())
		id := res.Header.Get("X-Openstack-Request-Id")
		Expect(id).To(MatchRegexp(requestIDPattern))
		Expect(id).NotTo(Equal(global), "the local id is always the API's own")
		steps.EventuallyStable(ctx, client, n.UUID, nodes.Manageable)

		var access, changes []map[string]any
		for _, l := range logLines() {
			Expect(l).To(HaveKey("time"))
			Expect(l).To(HaveKey("level"))
			if l["request_id"] != id {
				Expect(l).NotTo(And(HaveKeyWithValue("node", n.UUID), HaveKeyWithValue("msg", "Provision state changed")),
					"every state change of the manage comes from its request")
				continue
			}
			Expect(l).To(HaveKeyWithValue("global_request_id", global))
			if l["msg"] == "Provision state changed" {
				Expect(l).To(HaveKeyWithValue("node", n.UUID))
				changes = append(changes, l)
			} else if l["method"] == "PUT" {
				access = append(access, l)
			}
		}
		Expect(access).To(HaveLen(1), "the API's access line")
		Expect(changes).To(HaveLen(2), "to verifying by the RPC, to manageable by its worker")
		Expect(changes[1]).To(HaveKeyWithValue("provision_state", "manageable"))
		Expect(changes[1]).To(HaveKeyWithValue("level", "info"))
	})
})
