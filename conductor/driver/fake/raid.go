package fake

import (
	"context"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/model"
)

// OpRAIDStep is a RAID clean step, for fault injection.
const OpRAIDStep Op = "raid.clean_step"

// raid accepts any valid target configuration; its clean steps "build" the
// target (raid_config becomes target_raid_config) and tear it down.
type raid struct{ h *Hardware }

func (r *raid) Validate(ctx context.Context, t driver.TaskContext) error {
	return driver.ValidateRAIDConfig(t.Node().TargetRAIDConfig)
}

func (r *raid) LogicalDiskProperties() map[string]string { return driver.LogicalDiskProperties() }

func (r *raid) ValidateRAIDConfig(_ context.Context, _ driver.TaskContext, config map[string]any) error {
	return driver.ValidateRAIDConfig(config)
}

func (r *raid) CleanSteps(context.Context, driver.TaskContext) ([]driver.CleanStep, error) {
	return []driver.CleanStep{
		{Interface: string(hwcatalog.RAID), Step: "create_configuration"},
		{Interface: string(hwcatalog.RAID), Step: "delete_configuration"},
	}, nil
}

func (r *raid) ExecuteCleanStep(ctx context.Context, t driver.TaskContext, step driver.CleanStep) (driver.Result, error) {
	if err := r.h.fault(ctx, t, OpRAIDStep); err != nil {
		return 0, err
	}
	n := t.Node()
	switch step.Step {
	case "create_configuration":
		if len(n.TargetRAIDConfig) == 0 {
			return 0, errs.InvalidParameterValue("Node %s has no target RAID configuration.", n.UUID)
		}
		n.RAIDConfig = model.JSONObject(cloneJSON(n.TargetRAIDConfig))
	case "delete_configuration":
		n.RAIDConfig = model.JSONObject{}
	default:
		return 0, errs.InvalidParameterValue("Unknown RAID clean step %s.", step.Step)
	}
	return driver.Done, nil
}

func cloneJSON(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
