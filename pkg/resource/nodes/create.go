package nodes

import (
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/ident"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/states"
)

// DecodeCreate turns a create body into a new, unsaved node as seen at
// version v (docs/api.md §3.7, §4.1). Interface defaults are left to the
// caller, which knows the hardware types.
func DecodeCreate(body map[string]any, v microversion.Version) (*model.Node, error) {
	n := &model.Node{
		DriverInfo: model.JSONObject{}, DriverInternalInfo: model.JSONObject{},
		Properties: model.JSONObject{}, InstanceInfo: model.JSONObject{}, Extra: model.JSONObject{},
		CleanStep: model.JSONObject{}, DeployStep: model.JSONObject{},
		RAIDConfig: model.JSONObject{}, TargetRAIDConfig: model.JSONObject{},
		Traits: model.StringList{},
	}
	if err := Resource.Decode(n, body, v); err != nil {
		return nil, err
	}
	if n.Name != nil && !ident.ValidNodeName(*n.Name, v) {
		return nil, errs.InvalidParameterValue("Cannot create node with invalid name '%s'", *n.Name)
	}
	initial := string(states.Available)
	if v.AtLeast(microversion.EnrollInitial) {
		initial = string(states.Enroll)
	}
	n.ProvisionState = &initial
	return n, nil
}
