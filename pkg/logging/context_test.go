package logging_test

import (
	"context"
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/logging"
)

var _ = Describe("a logger carried by a context", func() {
	It("is the one FromContext returns, its fields on every line", func() {
		log, out := newLogger("json", false)
		ctx := logging.NewContext(context.Background(), logging.WithRequestID(log, "req-9").WithField("node", "n1"))
		logging.FromContext(ctx, logging.Discard()).WithField("step", "write").Info("writing")
		var line map[string]any
		Expect(json.Unmarshal(out.Bytes(), &line)).To(Succeed())
		Expect(line).To(HaveKeyWithValue("request_id", "req-9"))
		Expect(line).To(HaveKeyWithValue("node", "n1"))
		Expect(line).To(HaveKeyWithValue("step", "write"))
		Expect(line).To(HaveKeyWithValue("msg", "writing"))
	})

	It("falls back on the given logger, tagged with the context's request id", func() {
		log, out := newLogger("json", false)
		ctx := logging.ContextWithRequestID(context.Background(), "req-3")
		logging.FromContext(ctx, log).Info("fallback")
		var line map[string]any
		Expect(json.Unmarshal(out.Bytes(), &line)).To(Succeed())
		Expect(line).To(HaveKeyWithValue("request_id", "req-3"))
		Expect(logging.RequestID(ctx)).To(Equal("req-3"))

		out.Reset()
		logging.FromContext(context.Background(), log).Info("untagged")
		var untagged map[string]any
		Expect(json.Unmarshal(out.Bytes(), &untagged)).To(Succeed())
		Expect(untagged).To(HaveKeyWithValue("msg", "untagged"))
		Expect(untagged).NotTo(HaveKey("request_id"))
	})

	It("masks secrets in the fields it carries", func() {
		log, out := newLogger("text", false)
		ctx := logging.NewContext(context.Background(), log.WithField("driver_info", map[string]any{"ipmi_password": "hunter2"}))
		logging.FromContext(ctx, log).Info("x")
		Expect(out.String()).NotTo(ContainSubstring("hunter2"))
		Expect(out.String()).To(ContainSubstring("******"))
	})
})

var _ = Describe("request ids", func() {
	It("are made in Ironic's form, each new", func() {
		a, b := logging.NewRequestID(), logging.NewRequestID()
		Expect(a).To(MatchRegexp(`^req-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`))
		Expect(a).NotTo(Equal(b))
		Expect(logging.ValidRequestID(a)).To(BeTrue())
	})

	It("are accepted from a peer only in that form", func() {
		Expect(logging.ValidRequestID("req-0b6f4a52-1c1e-4d7a-9a43-6f3e1f0c2d11")).To(BeTrue())
		for _, bad := range []string{"", "req-1", "0b6f4a52-1c1e-4d7a-9a43-6f3e1f0c2d11",
			"req-0B6F4A52-1C1E-4D7A-9A43-6F3E1F0C2D11", "req-0b6f4a52-1c1e-4d7a-9a43-6f3e1f0c2d11\nlevel=error",
			"req-0b6f4a52-1c1e-4d7a-9a43-6f3e1f0c2d11x"} {
			Expect(logging.ValidRequestID(bad)).To(BeFalse(), bad)
		}
	})
})
