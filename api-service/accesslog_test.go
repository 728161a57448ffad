package apiservice

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/logging"
)

var _ = Describe("access log lines", func() {
	records := []accessRecord{
		{requestID: "req-6f1c", method: "GET", path: "/v1/nodes/6f1c0a2e-1b7d-4c55-9f0e-2d3a4b5c6d7e", status: 200, duration: 1234567 * time.Nanosecond},
		{requestID: "req-6f1c", globalRequestID: "req-0b6f4a52-1c1e-4d7a-9a43-6f3e1f0c2d11", method: "GET", path: "/v1/nodes", status: 200, duration: time.Millisecond},
		{requestID: "req-6f1d", method: "PATCH", path: "/v1/nodes/a b", status: 404, duration: 1500 * time.Nanosecond},
		{requestID: "req-6f1e", method: "GET", path: "/v1/nodes/password=hunter2", status: 400, duration: 3 * time.Second},
		{requestID: "req-6f1f", method: "GET", path: "/v1/x<y>&\"\\\x01\b\f\n\t\u2028é\xff", status: 500, duration: 0},
	}

	// lines logs every record through logrus and through the direct
	// writer, each into its own file, and returns both files' lines.
	lines := func(format string) (viaLogrus, direct [][]byte) {
		dir := GinkgoT().TempDir()
		logFile := func(name string) (*logrus.Logger, *os.File) {
			f, err := os.Create(filepath.Join(dir, name))
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(f.Close)
			log := logging.New(config.Default{LogFormat: format})
			log.SetOutput(f)
			return log, f
		}
		slow, slowFile := logFile("logrus.log")
		fast, fastFile := logFile("direct.log")
		w := newAccessWriter(fast)
		Expect(w).NotTo(BeNil())
		for _, r := range records {
			slow.WithFields(r.fields()).Info(accessMessage)
			w.write(r, time.Now())
		}
		read := func(f *os.File) [][]byte {
			b, err := os.ReadFile(f.Name())
			Expect(err).NotTo(HaveOccurred())
			return bytes.SplitAfter(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
		}
		return read(slowFile), read(fastFile)
	}

	It("are the text formatter's lines, secrets masked", func() {
		viaLogrus, direct := lines("text")
		Expect(direct).To(HaveLen(len(records)))
		stamp := regexp.MustCompile(`^time="[^"]+" `)
		for i := range direct {
			Expect(stamp.Match(direct[i])).To(BeTrue(), string(direct[i]))
			Expect(string(stamp.ReplaceAll(direct[i], nil))).To(Equal(string(stamp.ReplaceAll(viaLogrus[i], nil))))
		}
		Expect(bytes.Join(direct, nil)).NotTo(ContainSubstring("hunter2"))
	})

	It("are the JSON formatter's lines, secrets masked", func() {
		viaLogrus, direct := lines("json")
		Expect(direct).To(HaveLen(len(records)))
		for i := range direct {
			var got, want map[string]any
			Expect(json.Unmarshal(direct[i], &got)).To(Succeed(), string(direct[i]))
			Expect(json.Unmarshal(viaLogrus[i], &want)).To(Succeed())
			_, err := time.Parse(time.RFC3339Nano, got["time"].(string))
			Expect(err).NotTo(HaveOccurred())
			delete(got, "time")
			delete(want, "time")
			Expect(got).To(Equal(want))
			// Byte for byte too: the key order and escapes are encoding/json's.
			strip := regexp.MustCompile(`,"time":"[^"]+"`)
			Expect(string(strip.ReplaceAll(direct[i], nil))).To(Equal(string(strip.ReplaceAll(viaLogrus[i], nil))))
		}
		Expect(bytes.Join(direct, nil)).NotTo(ContainSubstring("hunter2"))
	})

	It("are left to logrus for a logger with other hooks or output", func() {
		log := logging.New(config.Default{})
		log.SetOutput(&bytes.Buffer{})
		Expect(newAccessWriter(log)).To(BeNil())
		log = logging.New(config.Default{})
		logtest.NewLocal(log)
		Expect(newAccessWriter(log)).To(BeNil())
	})
})
