package logging_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/model"
)

type bmc struct {
	Address  string
	Username string
	Password string
}

func newLogger(format string, debug bool) (*logrus.Logger, *bytes.Buffer) {
	log := logging.New(config.Default{LogFormat: format, Debug: debug})
	var out bytes.Buffer
	log.SetOutput(&out)
	return log, &out
}

// logSecrets logs one line carrying secrets in every shape a caller might
// pass them.
func logSecrets(log *logrus.Logger) {
	log.WithFields(logrus.Fields{
		"ipmi_password": "hunter2",
		"driver_info":   map[string]any{"ipmi_username": "admin", "ipmi_password": "hunter2", "nested": []any{map[string]any{"token": "tok-123"}}},
		"extra":         model.JSONObject{"auth_token": "tok-123"},
		"url":           "amqp://guest:hunter2@127.0.0.1:5672/",
		"bmc":           bmc{Address: "10.0.0.9", Username: "admin", Password: "hunter2"},
		"bmcp":          &bmc{Password: "hunter2"},
		"node":          "1be26c0b-03f2-4d2e-ae87-c02d7f33c123",
		"attempt":       3,
		"stderr":        `Error: {"password": "hunter2 tok-123"}`,
	}).WithError(errors.New("dial mysql://root:hunter2@db:3306/ferric: refused")).
		Info(`ipmitool -U admin password=hunter2 failed; retry with password="hunter2 tok-123"`)
}

var _ = Describe("New", func() {
	for _, format := range []string{"text", "json"} {
		It("never lets a secret reach "+format+" output", func() {
			log, out := newLogger(format, false)
			logSecrets(log)
			text := out.String()
			Expect(text).NotTo(BeEmpty())
			Expect(text).NotTo(ContainSubstring("hunter2"))
			Expect(text).NotTo(ContainSubstring("tok-123"))
			Expect(text).To(ContainSubstring("1be26c0b-03f2-4d2e-ae87-c02d7f33c123"))
			Expect(text).To(ContainSubstring("10.0.0.9"))
			Expect(text).To(ContainSubstring("admin"))
			Expect(text).To(ContainSubstring("******"))
		})
	}

	It("writes JSON lines with fields intact when json is chosen", func() {
		log, out := newLogger("json", false)
		logging.WithRequestID(log, "req-7").WithField("attempt", 3).Info("hello")
		var line map[string]any
		Expect(json.Unmarshal(out.Bytes(), &line)).To(Succeed())
		Expect(line).To(HaveKeyWithValue("msg", "hello"))
		Expect(line).To(HaveKeyWithValue("level", "info"))
		Expect(line).To(HaveKeyWithValue("request_id", "req-7"))
		Expect(line).To(HaveKeyWithValue("attempt", float64(3)))
		Expect(line).To(HaveKey("time"))
	})

	It("writes text lines otherwise", func() {
		log, out := newLogger("", false)
		logging.WithRequestID(log, "req-7").Info("hello")
		Expect(out.String()).To(ContainSubstring("request_id=req-7"))
		Expect(out.String()).To(ContainSubstring(`msg=hello`))
		Expect(json.Valid(out.Bytes())).To(BeFalse())
	})

	It("logs debug lines only in debug mode", func() {
		log, out := newLogger("text", false)
		log.Debug("quiet")
		Expect(out.String()).To(BeEmpty())

		log, out = newLogger("text", true)
		log.Debug("loud")
		Expect(out.String()).To(ContainSubstring("loud"))
	})

	It("masks without touching the caller's values", func() {
		log, _ := newLogger("json", false)
		info := map[string]any{"ipmi_password": "hunter2"}
		fields := logrus.Fields{"driver_info": info, "password": "hunter2"}
		log.WithFields(fields).Info("x")
		Expect(info["ipmi_password"]).To(Equal("hunter2"))
		Expect(fields["password"]).To(Equal("hunter2"))
	})

	It("masks entries of hooks registered later too", func() {
		log, _ := newLogger("text", false)
		seen := &capture{}
		log.AddHook(seen)
		log.WithField("secret", "hunter2").Info("token=abc")
		Expect(fmt.Sprint(seen.data)).NotTo(ContainSubstring("hunter2"))
		Expect(seen.message).NotTo(ContainSubstring("abc"))
	})
})

type capture struct {
	data    logrus.Fields
	message string
}

func (*capture) Levels() []logrus.Level { return logrus.AllLevels }

func (c *capture) Fire(e *logrus.Entry) error {
	c.data, c.message = e.Data, e.Message
	return nil
}

var _ = Describe("MaskHook", func() {
	It("keeps numbers and times typed", func() {
		log, out := newLogger("json", false)
		log.WithFields(logrus.Fields{"n": 5, "ok": true}).Info("x")
		Expect(strings.TrimSpace(out.String())).To(And(ContainSubstring(`"n":5`), ContainSubstring(`"ok":true`)))
	})
})
