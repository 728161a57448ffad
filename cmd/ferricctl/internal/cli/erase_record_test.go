package cli_test

import (
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/client/fakeironic"
)

var _ = Describe("node erase-record", func() {
	var fake *fakeironic.Server
	BeforeEach(func() {
		fake = startFake("1.49")
	})

	It("prints one row per erased disk and step from the node's driver_internal_info", func(ctx SpecContext) {
		fake.Handle("GET", "/v1/nodes/node-07", fakeironic.Response{Status: http.StatusOK, Body: `{"uuid": "` + node1 + `",
			"driver_internal_info": {"erase_record": [
				{"step": "erase_devices_metadata", "device": "/dev/sda", "method": "metadata", "passes": 1, "bytes": 4194304,
				 "duration": 0.02, "samples_checked": 4, "by": "agent", "at": "2026-12-02T12:00:00Z"},
				{"step": "erase_devices", "device": "/dev/sda", "method": "shred", "passes": 2, "bytes": 68719476736,
				 "duration": 301.5, "samples_checked": 258, "by": "agent", "at": "2026-12-02T12:05:02Z"},
				{"step": "erase_devices", "device": "/dev/fd0", "passes": 0, "bytes": 0, "duration": 0, "samples_checked": 0,
				 "skipped": "virtual media device", "by": "agent", "at": "2026-12-02T12:05:02Z"}]}}`})
		r := ferricctl(ctx, fake, nil, "node", "erase-record", "node-07", "-c", "Step", "-c", "Device", "-c", "Passes",
			"-c", "Bytes", "-c", "Samples Checked", "-c", "Skipped")
		expectOK(r)
		Expect(r.stdout).To(Equal(
			"+------------------------+----------+--------+-------------+-----------------+----------------------+\n" +
				"| Step                   | Device   | Passes | Bytes       | Samples Checked | Skipped              |\n" +
				"+------------------------+----------+--------+-------------+-----------------+----------------------+\n" +
				"| erase_devices_metadata | /dev/sda | 1      | 4194304     | 4               | None                 |\n" +
				"| erase_devices          | /dev/sda | 2      | 68719476736 | 258             | None                 |\n" +
				"| erase_devices          | /dev/fd0 | 0      | 0           | 0               | virtual media device |\n" +
				"+------------------------+----------+--------+-------------+-----------------+----------------------+\n"))

		r = ferricctl(ctx, fake, nil, "node", "erase-record", "node-07", "-f", "json", "-c", "By", "-c", "Method")
		expectOK(r)
		Expect(r.stdout).To(MatchJSON(`[{"By": "agent", "Method": "metadata"}, {"By": "agent", "Method": "shred"}, {"By": "agent", "Method": null}]`))
	})

	It("prints nothing for a node never cleaned", func(ctx SpecContext) {
		fake.Handle("GET", "/v1/nodes/node-07", fakeironic.Response{Status: http.StatusOK, Body: `{"uuid": "` + node1 + `", "driver_internal_info": {}}`})
		r := ferricctl(ctx, fake, nil, "node", "erase-record", "node-07")
		expectOK(r)
		Expect(r.stdout).To(BeEmpty())
	})
})
