// Package logging builds Ferric's logrus loggers. Every logger it makes
// carries a hook that masks secrets in the message and in fields before any
// formatter or other hook sees them, so a password passed as a log field
// never reaches output.
package logging

import (
	"fmt"
	"io"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/secrets"
)

// RequestIDKey is the field naming the API request a line belongs to.
const RequestIDKey = "request_id"

// GlobalRequestIDKey is the field naming the caller's own request id, when
// a caller (Nova, a deploy tool) sent one: oslo's global request id, which
// ties Ferric's work to the caller's logs.
const GlobalRequestIDKey = "global_request_id"

// New returns a logger writing to stderr in cfg.LogFormat ("json", else
// text) at debug level when cfg.Debug, info otherwise.
func New(cfg config.Default) *logrus.Logger {
	log := logrus.New()
	if cfg.LogFormat == "json" {
		log.SetFormatter(&logrus.JSONFormatter{TimestampFormat: time.RFC3339Nano})
	} else {
		log.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, TimestampFormat: time.RFC3339Nano})
	}
	log.SetLevel(logrus.InfoLevel)
	if cfg.Debug {
		log.SetLevel(logrus.DebugLevel)
	}
	log.AddHook(MaskHook{})
	return log
}

// Discard returns a logger that drops every entry, for a component built
// without one (tests that do not look at its log): no component falls back
// on logrus's process-wide logger.
func Discard() *logrus.Logger {
	log := logrus.New()
	log.SetOutput(io.Discard)
	return log
}

// WithRequestID tags every line logged through the result with id.
func WithRequestID(log logrus.FieldLogger, id string) *logrus.Entry {
	return log.WithField(RequestIDKey, id)
}

// MaskHook masks secrets in every entry: values of secret-named fields
// become "******", and strings, errors, JSON-like maps and anything else
// printable are scrubbed of password=... fragments and URL passwords.
// Register it before other hooks so they only ever see masked entries.
type MaskHook struct{}

func (MaskHook) Levels() []logrus.Level { return logrus.AllLevels }

// Fire edits the entry in place. logrus hands hooks a private copy of the
// field map, but the values may be shared with the caller, so they are
// replaced, never modified.
func (MaskHook) Fire(e *logrus.Entry) error {
	e.Message = secrets.MaskString(e.Message)
	for k, v := range e.Data {
		if secrets.IsSensitiveKey(k) {
			e.Data[k] = secrets.Masked
			continue
		}
		e.Data[k] = maskField(v)
	}
	return nil
}

func maskField(v any) any {
	switch t := v.(type) {
	case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64,
		float32, float64, time.Time, time.Duration:
		return v
	case string, map[string]any, model.JSONObject, map[string]string, []any, []map[string]any:
		return secrets.MaskValue(t)
	case error:
		return secrets.MaskString(t.Error())
	case fmt.Stringer:
		return secrets.MaskString(t.String())
	}
	// Structs, pointers and other containers are flattened to text, the
	// only form in which their secrets can be found without knowing them.
	return secrets.MaskString(fmt.Sprintf("%+v", v))
}
