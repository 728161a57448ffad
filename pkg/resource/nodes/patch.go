package nodes

import (
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/ident"
	"github.com/ferricbm/ferric/pkg/resource/jsonpatch"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/states"
)

// chassisRemoval is when chassis_uuid became removable.
var chassisRemoval = microversion.V1(25)

// CheckPatch enforces the path-level rules (docs/api.md §3.8 rules 3-4): every
// op targets a patchable attribute known at version v.
func CheckPatch(ops []jsonpatch.Op, v microversion.Version) error {
	if err := Resource.CheckPatch(ops, v); err != nil {
		return err
	}
	for _, op := range ops {
		if op.Field() == "chassis_uuid" && op.Op == jsonpatch.OpRemove && !v.AtLeast(chassisRemoval) {
			return errs.NotAcceptable("")
		}
	}
	return nil
}

// CheckUpdatable enforces the node-level 409 rules of PATCH (docs/api.md §4.2)
// before anything is applied.
func CheckUpdatable(n *model.Node, ops []jsonpatch.Op, v microversion.Version) error {
	ps := n.State()
	if n.TargetProvisionState != nil && !states.UpdateAllowed(ps) && !onlyRemovesInstanceUUID(n, ops) {
		return errs.New(errs.KindInvalidState, "Node %s can not be updated while a state transition is in progress.", n.UUID)
	}
	if ps == states.Inspecting && v.AtLeast(microversion.InspectWaitShown) {
		return errs.New(errs.KindInvalidState, "Node %s can not be updated while it is being inspected.", n.UUID)
	}
	return nil
}

func onlyRemovesInstanceUUID(n *model.Node, ops []jsonpatch.Op) bool {
	return n.Maintenance && len(ops) == 1 && ops[0].Op == jsonpatch.OpRemove && ops[0].Path == "/instance_uuid"
}

// Patch applies the JSON patch document raw to a copy of n under every
// rule of PATCH at version v and returns the copy. The API runs it on the
// node it read, to refuse a bad patch at once; the conductor runs it again
// on the row it read under the node lock and saves that, so concurrent
// patches of different fields, or of different keys of one field, all
// survive and a patch never writes back what it did not touch.
func Patch(n *model.Node, raw []byte, v microversion.Version) (*model.Node, error) {
	ops, err := jsonpatch.Decode(raw)
	if err != nil {
		return nil, err
	}
	if err := CheckPatch(ops, v); err != nil {
		return nil, err
	}
	if err := CheckUpdatable(n, ops, v); err != nil {
		return nil, err
	}
	patched, err := Apply(n, ops, v)
	if err != nil {
		return nil, err
	}
	if err := CheckProtection(n, patched); err != nil {
		return nil, err
	}
	return patched, nil
}

// Apply patches a copy of n and returns it; n itself is not changed. The
// result is validated with the create rules (types, required fields, name
// rules of version v).
func Apply(n *model.Node, ops []jsonpatch.Op, v microversion.Version) (*model.Node, error) {
	out, err := Resource.Apply(n, ops)
	if err != nil {
		return nil, err
	}
	touched := map[string]bool{}
	for _, op := range ops {
		touched[op.Field()] = true
	}
	if touched["name"] && out.Name != nil && !ident.ValidNodeName(*out.Name, v) {
		return nil, errs.InvalidParameterValue("Node %s: Cannot change name to invalid name '%s'", n.UUID, *out.Name)
	}
	if touched["driver"] && out.Driver != n.Driver && n.ConsoleEnabled {
		return nil, errs.New(errs.KindInvalidState, "Node %s can not update the driver while the console is enabled. Please stop the console first.", n.UUID)
	}
	return out, nil
}

// CheckProtection applies the 1.48 rule the API can check on its own: a
// protected_reason needs protected. (That protected itself is only set
// on active nodes is checked by the conductor under the node lock.)
func CheckProtection(before, after *model.Node) error {
	reasonChanged := after.ProtectedReason != nil && (before.ProtectedReason == nil || *before.ProtectedReason != *after.ProtectedReason)
	if reasonChanged && !after.Protected {
		return errs.InvalidParameterValue("Cannot set protected_reason for node %s without protected set to true.", before.UUID)
	}
	return nil
}
