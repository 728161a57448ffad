package fake

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

// driver_info keys that make a node's fake BMC behave like a real one: each
// power and management call takes fake_latency (a Go duration or seconds),
// fails with probability fake_failure_rate, and with probability
// fake_timeout_rate never answers, so the caller's deadline ends it. Scale
// tests use them to make power sync wait as it would on real hardware.
const (
	infoLatency     = "fake_latency"
	infoFailureRate = "fake_failure_rate"
	infoTimeoutRate = "fake_timeout_rate"
)

// behaviourProperties describes the keys, served as fake-hardware's driver
// properties (the power and management interfaces read them).
var behaviourProperties = map[string]string{
	infoLatency:     "How long each power and management call takes: a Go duration (\"300ms\") or seconds. Optional.",
	infoFailureRate: "Probability, from 0 to 1, that a power or management call fails. Optional.",
	infoTimeoutRate: "Probability, from 0 to 1, that a power or management call never answers. Optional.",
}

// behaviour is what a node's driver_info asks of its fake BMC.
type behaviour struct {
	latency     time.Duration
	failureRate float64
	timeoutRate float64
}

func parseBehaviour(info model.JSONObject) (behaviour, error) {
	var b behaviour
	if v, ok := info[infoLatency]; ok {
		d, err := duration(v)
		if err != nil || d < 0 {
			return b, errs.InvalidParameterValue("driver_info %s must be a non-negative duration, not %v.", infoLatency, v)
		}
		b.latency = d
	}
	for key, dst := range map[string]*float64{infoFailureRate: &b.failureRate, infoTimeoutRate: &b.timeoutRate} {
		v, ok := info[key]
		if !ok {
			continue
		}
		f, err := number(v)
		if err != nil || f < 0 || f > 1 {
			return b, errs.InvalidParameterValue("driver_info %s must be a number from 0 to 1, not %v.", key, v)
		}
		*dst = f
	}
	return b, nil
}

func duration(v any) (time.Duration, error) {
	if s, ok := v.(string); ok && strings.TrimLeft(s, "0123456789.") != "" {
		return time.ParseDuration(s)
	}
	f, err := number(v)
	return time.Duration(f * float64(time.Second)), err
}

func number(v any) (float64, error) {
	switch n := v.(type) {
	case float64:
		return n, nil
	case string:
		return strconv.ParseFloat(n, 64)
	}
	return 0, fmt.Errorf("not a number: %v", v)
}

// behave spends the call's latency, then times out or fails as often as
// the node asks.
func behave(ctx context.Context, t driver.TaskContext, op Op) error {
	b, err := parseBehaviour(t.Node().DriverInfo)
	if err != nil {
		return err
	}
	if b.timeoutRate > 0 && rand.Float64() < b.timeoutRate {
		<-ctx.Done()
		return fmt.Errorf("fake %s: BMC did not answer: %w", op, ctx.Err())
	}
	if b.latency > 0 {
		timer := time.NewTimer(b.latency)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("fake %s: %w", op, ctx.Err())
		case <-timer.C:
		}
	}
	if b.failureRate > 0 && rand.Float64() < b.failureRate {
		return fmt.Errorf("fake %s: BMC error (injected by %s)", op, infoFailureRate)
	}
	return nil
}
