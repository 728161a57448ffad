// Package allocations holds the allocation resource's API rules that do
// not need HTTP (/v1/allocations, 1.52+): the field catalogue, create body
// decoding, and which nodes an allocation may be given.
package allocations

import (
	"slices"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/catalogue"
	"github.com/ferricbm/ferric/pkg/resource/filter"
	"github.com/ferricbm/ferric/pkg/resource/ident"
	"github.com/ferricbm/ferric/pkg/resource/jsonpatch"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/nodes"
	"github.com/ferricbm/ferric/pkg/resource/present"
	"github.com/ferricbm/ferric/pkg/states"
)

// Versions of the allocation features.
var (
	// Since is when /v1/allocations and node.allocation_uuid appeared.
	Since = microversion.Allocations
	// Updates is when PATCH /v1/allocations/{allocation} appeared.
	Updates = microversion.V1(57)
)

// Field is one top-level allocation attribute.
type Field = catalogue.Field[model.Allocation]

const resource = "allocation"

var setName = catalogue.Text(resource, "name", catalogue.TextRule{MaxLen: 255, Check: func(s string) (string, error) {
	if !ident.ValidNodeName(s, Since) {
		return "", errs.New(errs.KindInvalid, "Cannot create allocation with invalid name '%s'", s)
	}
	return s, nil
}}, func(a *model.Allocation, s *string) { a.Name = s })

// Catalogue lists every allocation attribute.
var Catalogue = []Field{
	{Name: "uuid", Since: Since, Create: true, Sortable: true, Get: func(a *model.Allocation) any { return a.UUID }},
	{Name: "name", Since: Since, Create: true, Patch: true, Sortable: true,
		Get: func(a *model.Allocation) any { return present.Str(a.Name) }, Text: func(a *model.Allocation) *string { return a.Name },
		Set: setName},
	{Name: "node_uuid", Since: Since, Columns: []string{"node_id"},
		Get:     func(a *model.Allocation) any { return present.Str(a.NodeUUID) },
		Filters: []catalogue.Filter{{Param: "node", Query: catalogue.QueryNode, Column: "node_id"}}},
	{Name: "state", Since: Since, Sortable: true, Get: func(a *model.Allocation) any { return a.State },
		Filters: []catalogue.Filter{{}}},
	{Name: "last_error", Since: Since, Sortable: true,
		Get: func(a *model.Allocation) any { return present.Str(a.LastError) }, Text: func(a *model.Allocation) *string { return a.LastError }},
	{Name: "resource_class", Since: Since, Create: true, Sortable: true,
		Get: func(a *model.Allocation) any { return present.Str(a.ResourceClass) }, Text: func(a *model.Allocation) *string { return a.ResourceClass },
		Set:     catalogue.String(resource, "resource_class", 80, func(a *model.Allocation) **string { return &a.ResourceClass }),
		Filters: []catalogue.Filter{{}}},
	{Name: "traits", Since: Since, Create: true,
		Get:  func(a *model.Allocation) any { return list(a.Traits) },
		List: func(a *model.Allocation) *model.StringList { return &a.Traits },
		Set:  stringList("traits", nodes.CheckTrait, func(a *model.Allocation) *model.StringList { return &a.Traits })},
	{Name: "candidate_nodes", Since: Since, Create: true,
		Get:  func(a *model.Allocation) any { return list(a.CandidateNodes) },
		List: func(a *model.Allocation) *model.StringList { return &a.CandidateNodes },
		Set:  stringList("candidate_nodes", nil, func(a *model.Allocation) *model.StringList { return &a.CandidateNodes })},
	{Name: "extra", Since: Since, Create: true, Patch: true,
		Get:    func(a *model.Allocation) any { return present.Obj(a.Extra) },
		Object: func(a *model.Allocation) *model.JSONObject { return &a.Extra },
		Set:    catalogue.Object(resource, "extra", func(a *model.Allocation) *model.JSONObject { return &a.Extra })},
	{Name: "created_at", Since: Since, Sortable: true, Get: func(a *model.Allocation) any { return present.Time(&a.CreatedAt) }},
	{Name: "updated_at", Since: Since, Sortable: true, Get: func(a *model.Allocation) any { return present.Time(a.UpdatedAt) }},
}

// Resource is the allocation catalogue and representation. A list shows
// every field unless ?fields asks for fewer: allocations have no /detail.
var Resource = catalogue.New(&catalogue.Catalogue[model.Allocation]{Resource: resource, Fields: Catalogue,
	Path:     func(a *model.Allocation) string { return "allocations/" + a.UUID },
	UUID:     func(a *model.Allocation) string { return a.UUID },
	NewUUID:  func(a *model.Allocation) *string { return &a.UUID },
	SizeHint: 640,
})

func list(l model.StringList) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// stringList is the Set of a list of strings, each checked by check if set;
// null is an empty list.
func stringList(name string, check func(string) error, ptr func(*model.Allocation) *model.StringList) func(*model.Allocation, any) error {
	return func(a *model.Allocation, v any) error {
		if v == nil {
			*ptr(a) = nil
			return nil
		}
		raw, ok := v.([]any)
		if !ok {
			return catalogue.TypeError(resource, name, v, "array")
		}
		out := make(model.StringList, 0, len(raw))
		for _, it := range raw {
			s, ok := it.(string)
			if !ok {
				return catalogue.TypeError(resource, name, it, "string")
			}
			if check != nil {
				if err := check(s); err != nil {
					return err
				}
			}
			out = append(out, s)
		}
		*ptr(a) = out
		return nil
	}
}

// Apply patches a copy of a at version v and returns it; a itself is not
// changed. Only name and extra may change (1.57).
func Apply(a *model.Allocation, ops []jsonpatch.Op, v microversion.Version) (*model.Allocation, error) {
	return Resource.Patch(a, ops, v)
}

// DecodeCreate turns a create body into an unsaved allocation, allocating
// (candidate node names are the caller's to resolve to UUIDs).
func DecodeCreate(body map[string]any, v microversion.Version) (*model.Allocation, error) {
	a := &model.Allocation{Extra: model.JSONObject{}, State: model.AllocationAllocating}
	if err := Resource.Decode(a, body, v); err != nil {
		return nil, err
	}
	if a.ResourceClass == nil || *a.ResourceClass == "" {
		return nil, errs.New(errs.KindInvalid, "The resource_class field is mandatory when not backfilling")
	}
	return a, nil
}

// Matches reports whether node n may be given to allocation a: available,
// its power state known, not in maintenance, without an instance or
// allocation, of a's resource class, with every trait a asks for, and
// among a's candidates when it names any.
func Matches(a *model.Allocation, n *model.Node) bool {
	if n.State() != states.Available || n.Maintenance || n.InstanceUUID != nil || n.AllocationID != nil || n.PowerState == nil {
		return false
	}
	if a.ResourceClass == nil || n.ResourceClass == nil || *n.ResourceClass != *a.ResourceClass {
		return false
	}
	if len(a.CandidateNodes) > 0 && !slices.Contains(a.CandidateNodes, n.UUID) {
		return false
	}
	for _, t := range a.Traits {
		if !slices.Contains(n.Traits, t) {
			return false
		}
	}
	return true
}

// CandidateFilter is the part of Matches the node list can apply.
func CandidateFilter(a *model.Allocation) []filter.Condition {
	conds := []filter.Condition{
		{Column: "provision_state", Value: string(states.Available)},
		{Column: "maintenance", Value: false},
		{Column: "instance_uuid", Op: filter.Set, Value: false},
		{Column: "allocation_id", Op: filter.Set, Value: false},
		{Column: "power_state", Op: filter.Set, Value: true},
		{Column: "resource_class", Value: *a.ResourceClass},
	}
	if len(a.CandidateNodes) > 0 {
		conds = append(conds, filter.Condition{Column: "uuid", Op: filter.In, Value: []string(a.CandidateNodes)})
	}
	return conds
}

// VerifyDeallocation refuses to release the node of an allocation while
// the node is active or busy in a state that takes no updates, unless it
// is in maintenance.
func VerifyDeallocation(n *model.Node, allocationUUID string) error {
	if n.Maintenance {
		return nil
	}
	if n.TargetState() != "" && !states.UpdateAllowed(n.State()) {
		return errs.New(errs.KindInvalidState,
			"Cannot remove allocation %s for node %s, because the node is in state %s where updates are not allowed (and maintenance mode is off)",
			allocationUUID, n.UUID, n.State())
	}
	if n.State() == states.Active {
		return errs.New(errs.KindInvalidState,
			"Cannot remove allocation %s for node %s, because the node is active (and maintenance mode is off)", allocationUUID, n.UUID)
	}
	return nil
}
