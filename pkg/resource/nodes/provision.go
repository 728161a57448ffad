package nodes

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/ident"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/states"
)

// ProvisionRequest is a decoded PUT .../states/provision body.
type ProvisionRequest struct {
	Target      string
	ConfigDrive any
	CleanSteps  []map[string]any
	// present records which optional keys the client sent, since an
	// explicit null still counts as "given" for the combination rules.
	present        map[string]bool
	rescuePassword any
}

var provisionKeys = []string{"target", "configdrive", "clean_steps", "deploy_steps", "service_steps",
	"rescue_password", "disable_ramdisk", "runbook"}

// DecodeProvision checks the body's keys and the target's type.
func DecodeProvision(body map[string]any) (ProvisionRequest, error) {
	r := ProvisionRequest{present: map[string]bool{}}
	target, err := decodeTarget(body, provisionKeys...)
	if err != nil {
		return r, err
	}
	r.Target = target
	for k := range body {
		r.present[k] = true
	}
	r.ConfigDrive = body["configdrive"]
	r.rescuePassword = body["rescue_password"]
	if steps, given := body["clean_steps"]; given && steps != nil {
		list, err := decodeSteps(steps)
		if err != nil {
			return r, err
		}
		r.CleanSteps = list
	}
	return r, nil
}

// Has reports whether the body carried key.
func (r ProvisionRequest) Has(key string) bool { return r.present[key] }

var targetSince = map[string]microversion.Version{
	"manage": microversion.ManageVerbs, "provide": microversion.ManageVerbs,
	"inspect": microversion.InspectVerb, "abort": microversion.AbortVerb,
	"clean": microversion.CleanVerb, "adopt": microversion.AdoptVerb,
	"rescue": microversion.RescueVerbs, "unrescue": microversion.RescueVerbs,
	"deploy": microversion.DeployVerbs, "unhold": microversion.UnholdVerb,
	"service": microversion.ServiceVerb,
}

var (
	disableRamdiskSince = microversion.V1(70)
	configDriveVendor   = microversion.V1(59)
	cleanStepInterfaces = map[string]bool{"vendor": true, "power": true, "management": true,
		"firmware": true, "deploy": true, "bios": true, "raid": true}
)

// Validate applies the checks of docs/api.md §5.2 (steps 2-9) in order to a
// request for node n at version v, and returns the state machine event the
// target fires.
func (r ProvisionRequest) Validate(n *model.Node, v microversion.Version) (states.Event, error) {
	if since, ok := targetSince[r.Target]; ok && !v.AtLeast(since) {
		return "", errs.NotAcceptable("")
	}
	if (states.State(r.Target) == states.Active || states.State(r.Target) == states.Rebuild) && n.Maintenance {
		return "", errs.NodeInMaintenance("provisioning", n.UUID)
	}
	ps := n.State()
	event, ok := states.VerbEvent(r.Target)
	if !ok || !states.Allowed(ps, event) {
		if n.Reservation != nil {
			return "", errs.NodeLocked(n.UUID, *n.Reservation)
		}
		return "", errs.InvalidStateRequested(r.Target, n.UUID, string(ps))
	}
	if err := r.checkConfigDrive(v); err != nil {
		return "", err
	}
	if r.Has("disable_ramdisk") {
		if !v.AtLeast(disableRamdiskSince) {
			return "", errs.NotAcceptable("")
		}
		if states.Event(r.Target) != states.EventClean {
			return "", errs.InvalidParameterValue("disable_ramdisk can be used only with the clean target")
		}
	}
	if r.Has("clean_steps") && states.Event(r.Target) != states.EventClean {
		return "", errs.InvalidParameterValue("\"clean_steps\" is only valid when setting target provision state to %s", states.EventClean)
	}
	if r.Has("deploy_steps") {
		if !v.AtLeast(microversion.DeploySteps) {
			return "", errs.NotAcceptable("")
		}
		if states.State(r.Target) != states.Active && states.State(r.Target) != states.Rebuild {
			return "", errs.InvalidParameterValue("\"deploy_steps\" is only valid when setting target provision state to %s or %s", states.Active, states.Rebuild)
		}
	}
	if r.Has("rescue_password") && states.Event(r.Target) != states.EventRescue {
		return "", errs.InvalidParameterValue("\"rescue_password\" is only valid when setting target provision state to %s", states.EventRescue)
	}
	if states.Event(r.Target) == states.EventAbort {
		if ps == states.InspectWait && !v.AtLeast(microversion.AbortInspectWait) {
			return "", errs.NotAcceptable("")
		}
		if ps == states.DeployWait && !v.AtLeast(microversion.AbortDeployWait) {
			return "", errs.NotAcceptable("")
		}
	}
	if (r.Has("service_steps") || r.Has("runbook")) && states.Event(r.Target) != states.EventService {
		return "", errs.InvalidParameterValue("\"service_steps\" is only valid when setting target provision state to %s", states.EventService)
	}
	if states.Event(r.Target) == states.EventClean && r.CleanSteps == nil {
		return "", errs.InvalidParameterValue("\"clean_steps\" is required when setting target provision state to %s", states.EventClean)
	}
	if states.Event(r.Target) == states.EventRescue {
		pw, _ := r.rescuePassword.(string)
		if strings.TrimSpace(pw) == "" {
			return "", errs.InvalidParameterValue("A non-empty \"rescue_password\" is required when setting target provision state to %s", states.EventRescue)
		}
	}
	return event, nil
}

func (r ProvisionRequest) checkConfigDrive(v microversion.Version) error {
	if !r.Has("configdrive") {
		return nil
	}
	allowed := states.State(r.Target) == states.Active || (states.State(r.Target) == states.Rebuild && v.AtLeast(microversion.ConfigDriveRebuild))
	if !allowed {
		return errs.InvalidParameterValue("Adding a config drive is only supported when setting provision state to %s", states.Active)
	}
	switch cd := r.ConfigDrive.(type) {
	case nil, string:
		return nil
	case map[string]any:
		if !v.AtLeast(microversion.ConfigDriveObject) {
			return errs.InvalidParameterValue("Invalid configdrive format: a JSON object needs API version %s", microversion.ConfigDriveObject)
		}
		for k := range cd {
			ok := k == "meta_data" || k == "network_data" || k == "user_data" || (k == "vendor_data" && v.AtLeast(configDriveVendor))
			if !ok {
				return errs.InvalidParameterValue("Invalid configdrive format: unexpected key %s", k)
			}
		}
		return nil
	default:
		return errs.InvalidParameterValue("Invalid configdrive format: expected a string or an object")
	}
}

func decodeSteps(raw any) ([]map[string]any, error) {
	list, ok := raw.([]any)
	if !ok {
		return nil, errs.InvalidParameterValue("Invalid clean_steps: %s is not of type 'array'", jsonText(raw))
	}
	out := make([]map[string]any, 0, len(list))
	for _, it := range list {
		step, ok := it.(map[string]any)
		if !ok {
			return nil, errs.InvalidParameterValue("Invalid clean_steps: %s is not of type 'object'", jsonText(it))
		}
		if err := checkStep(step); err != nil {
			return nil, err
		}
		out = append(out, step)
	}
	return out, nil
}

func checkStep(step map[string]any) error {
	bad := func(why string) error { return errs.InvalidParameterValue("Invalid clean_steps: %s", why) }
	for k, v := range step {
		switch k {
		case "interface":
			s, _ := v.(string)
			if !cleanStepInterfaces[s] {
				return bad(jsonText(v) + " is not a valid step interface")
			}
		case "step":
			if s, ok := v.(string); !ok || s == "" {
				return bad("'step' must be a non-empty string")
			}
		case "args":
			if _, ok := v.(map[string]any); !ok {
				return bad("'args' must be an object")
			}
		case "order":
			if !nonNegativeInt(v) {
				return bad("'order' must be a non-negative integer")
			}
		case "execute_on_child_nodes":
			if _, ok := v.(bool); !ok {
				return bad("'execute_on_child_nodes' must be a boolean")
			}
		case "limit_child_node_execution":
			l, ok := v.([]any)
			if !ok {
				return bad("'limit_child_node_execution' must be a list of node UUIDs")
			}
			for _, u := range l {
				if s, ok := u.(string); !ok || !ident.IsUUID(s) {
					return bad("'limit_child_node_execution' must be a list of node UUIDs")
				}
			}
		default:
			return bad("Additional properties are not allowed ('" + k + "' was unexpected)")
		}
	}
	for _, k := range []string{"interface", "step"} {
		if _, ok := step[k]; !ok {
			return bad("'" + k + "' is a required property")
		}
	}
	return nil
}

func nonNegativeInt(v any) bool {
	switch t := v.(type) {
	case json.Number:
		n, err := strconv.ParseInt(t.String(), 10, 64)
		return err == nil && n >= 0
	case float64:
		return t >= 0 && t == float64(int64(t))
	case string:
		n, err := strconv.Atoi(t)
		return err == nil && n >= 0 && t != "" && strings.Trim(t, "0123456789") == ""
	}
	return false
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "value"
	}
	return string(b)
}

// powerTargets are the accepted power targets; the soft ones need 1.27.
var powerTargets = map[string]bool{states.PowerOn: true, states.PowerOff: true, states.Rebooting: true,
	states.SoftPowerOff: true, states.SoftRebooting: true}

// PowerRequest is a decoded PUT .../states/power body.
type PowerRequest struct {
	Target  string
	Timeout int
	timeout bool
}

// DecodePower checks the power body and applies docs/api.md §5.1 rules for node
// n (named ident by the client) at version v.
func DecodePower(body map[string]any, n *model.Node, nodeIdent string, v microversion.Version) (PowerRequest, error) {
	var r PowerRequest
	target, err := decodeTarget(body, "target", "timeout")
	if err != nil {
		return r, err
	}
	r.Target = target
	if t, given := body["timeout"]; given && t != nil {
		r.timeout = true
		num, ok := t.(json.Number)
		n, err := strconv.Atoi(string(num))
		if !ok || err != nil {
			return r, errs.InvalidParameterValue("Invalid timeout %s: expected an integer", jsonText(t))
		}
		r.Timeout = n
	}
	if (r.Target == states.SoftPowerOff || r.Target == states.SoftRebooting || r.timeout) && !v.AtLeast(microversion.SoftPower) {
		return r, errs.NotAcceptable("")
	}
	if r.timeout && r.Timeout < 1 {
		return r, errs.InvalidParameterValue("timeout has to be positive integer")
	}
	if !powerTargets[r.Target] {
		return r, errs.InvalidStateRequested(r.Target, nodeIdent, pyStr(n.PowerState))
	}
	if ps := n.State(); ps == states.Cleaning || ps == states.CleanWait {
		return r, errs.InvalidStateRequested(r.Target, nodeIdent, string(ps))
	}
	return r, nil
}

func pyStr(s *string) string {
	if s == nil {
		return "None"
	}
	return *s
}

// RescuePassword is the rescue_password the request carried, "" if none.
func (r ProvisionRequest) RescuePassword() string {
	pw, _ := r.rescuePassword.(string)
	return pw
}

// decodeTarget refuses a state change body with members other than
// allowed, and reads its mandatory target.
func decodeTarget(body map[string]any, allowed ...string) (string, error) {
	if err := errs.OnlyKeys(body, allowed...); err != nil {
		return "", err
	}
	raw, ok := body["target"]
	if !ok || raw == nil {
		return "", errs.New(errs.KindMissingParameterValue, "Missing mandatory parameter: target")
	}
	target, ok := raw.(string)
	if !ok {
		return "", errs.InvalidParameterValue("Invalid target %s: expected a string", jsonText(raw))
	}
	return target, nil
}
