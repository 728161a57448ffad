package deploy_test

import (
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/tests/e2e/steps"
	"github.com/ferricbm/ferric/tests/lab"
)

// scrapeMetrics GETs a /metrics page as Prometheus does, without
// credentials.
func scrapeMetrics(url string) string {
	GinkgoHelper()
	resp, err := http.Get(url)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return string(body)
}

// seriesValue is the value of one series (name and labels as exported),
// 0 when the page does not have it.
func seriesValue(page, series string) float64 {
	GinkgoHelper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(page)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	Expect(err).NotTo(HaveOccurred())
	return v
}

var _ = Describe("Prometheus metrics of a lab deploy", func() {
	It("show the deploy's transitions, duration and bytes written on the conductor, and its requests on the API", func(ctx SpecContext) {
		const imageSize = 16 << 20
		image := steps.NewDiskImage(workDir, "metrics", imageSize)

		node := theLab.Nodes[2]
		node.SetMode(lab.ModeCallback)
		DeferCleanup(node.SetMode, lab.ModeAuto)
		uuid := enrol(ctx, node, "iscsi")
		steps.SetInstanceInfo(ctx, client, uuid, map[string]any{"image_source": imageURL + "/metrics.qcow2", "image_checksum": image.MD5})

		before := scrapeMetrics(conductorMetrics)
		series := func(page string) map[string]float64 {
			return map[string]float64{
				"written":  seriesValue(page, `ferric_disk_written_bytes_total{operation="deploy"}`),
				"deploys":  seriesValue(page, `ferric_provision_duration_seconds_count{operation="deploy",result="active"}`),
				"seconds":  seriesValue(page, `ferric_provision_duration_seconds_sum{operation="deploy",result="active"}`),
				"start":    seriesValue(page, `ferric_provision_state_transitions_total{from="available",to="deploying"}`),
				"wait":     seriesValue(page, `ferric_provision_state_transitions_total{from="deploying",to="wait call-back"}`),
				"callback": seriesValue(page, `ferric_provision_state_transitions_total{from="wait call-back",to="deploying"}`),
				"active":   seriesValue(page, `ferric_provision_state_transitions_total{from="deploying",to="active"}`),
				"images":   seriesValue(page, `ferric_image_write_duration_seconds_count`),
			}
		}
		start := time.Now()
		steps.Provision(ctx, client, uuid, nodes.TargetActive)
		steps.EventuallyActive(ctx, client, uuid, deployTimeout)
		elapsed := time.Since(start)
		was, now := series(before), series(scrapeMetrics(conductorMetrics))

		By("the conductor counted the image's bytes onto the disk")
		written := now["written"] - was["written"]
		Expect(written).To(BeNumerically(">=", imageSize), "the whole image reached the disk")
		Expect(written).To(BeNumerically("<", 2*imageSize), "nothing written twice")
		Expect(now["images"] - was["images"]).To(Equal(1.0))

		By("the conductor saw the callback deploy's states and timed the deploy")
		for _, k := range []string{"start", "wait", "callback", "active", "deploys"} {
			Expect(now[k]-was[k]).To(Equal(1.0), k)
		}
		seconds := now["seconds"] - was["seconds"]
		Expect(seconds).To(BeNumerically(">", 0))
		Expect(seconds).To(BeNumerically("<=", elapsed.Seconds()))

		By("the conductor handled the deploy RPC and exports its pool and locks")
		page := scrapeMetrics(conductorMetrics)
		Expect(seriesValue(page, `ferric_rpc_server_duration_seconds_count{method="do_node_deploy",result="ok"}`)).To(BeNumerically(">=", 1))
		Expect(page).To(ContainSubstring("# TYPE ferric_workers_busy gauge"))
		Expect(page).To(ContainSubstring("# TYPE ferric_node_lock_wait_seconds histogram"))

		By("the API counted the provision request and the callback by route")
		api := scrapeMetrics(deployment.APIURL + "/metrics")
		Expect(seriesValue(api, `ferric_api_request_duration_seconds_count{method="PUT",route="/v1/nodes/:node/states/provision",status="202"}`)).To(BeNumerically(">=", 1))
		Expect(seriesValue(api, `ferric_rpc_client_duration_seconds_count{method="do_node_deploy",result="ok"}`)).To(BeNumerically(">=", 1))
		Expect(api).NotTo(ContainSubstring(uuid))

		undeploy(ctx, node, uuid)
		Expect(os.Remove(image.Raw)).To(Succeed())
	}, SpecTimeout(deployTimeout+2*time.Minute))
})
