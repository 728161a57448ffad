package volume

import (
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/catalogue"
	"github.com/ferricbm/ferric/pkg/resource/jsonpatch"
	"github.com/ferricbm/ferric/pkg/resource/present"
)

type target = model.VolumeTarget

var targets = newResource(&catalogue.Catalogue[target]{Resource: "target",
	Fields: append([]catalogue.Field[target]{
		str("target", prop{name: "uuid", kind: kString, nullable: true, maxLen: 36}, func(t *target) *string { return &t.UUID }),
		byNode(str("target", prop{name: "node_uuid", kind: kString, required: true, maxLen: 36}, func(t *target) *string { return &t.NodeUUID })),
		str("target", prop{name: "volume_type", kind: kString, required: true, maxLen: 64}, func(t *target) *string { return &t.VolumeType }),
		row("target", prop{name: "boot_index", kind: kInteger, required: true, nonNegative: true},
			func(t *target) any { return t.BootIndex }, func(t *target, v any) { t.BootIndex, _ = integer(v) }),
		str("target", prop{name: "volume_id", kind: kString, required: true, maxLen: 36}, func(t *target) *string { return &t.VolumeID }),
		masked(obj("target", prop{name: "properties", kind: kObject, nullable: true}, func(t *target) *model.JSONObject { return &t.Properties })),
		obj("target", prop{name: "extra", kind: kObject, nullable: true}, func(t *target) *model.JSONObject { return &t.Extra }),
	}, times(func(t *target) any { return present.Time(&t.CreatedAt) }, func(t *target) any { return present.Time(t.UpdatedAt) })...),
	Defaults: []string{"uuid", "node_uuid", "volume_type", "boot_index", "volume_id"},
	SizeHint: 768,
}, "targets", func(t *target) string { return t.UUID })

// TargetCatalogue lists every target attribute.
var TargetCatalogue = targets.cat

// Targets describes the volume target endpoints.
var Targets = targets.res

// masked shows a row's value with its credentials masked (the stored value
// keeps them).
func masked[M any](f catalogue.Field[M]) catalogue.Field[M] {
	f.Masked = true
	return f
}

// DecodeTarget turns a create body into an unsaved target with NodeUUID
// set; the caller resolves the node.
func DecodeTarget(body map[string]any) (*model.VolumeTarget, error) {
	t := &model.VolumeTarget{Properties: model.JSONObject{}, Extra: model.JSONObject{}}
	u, node, err := decode(TargetCatalogue, t, body)
	if err != nil {
		return nil, err
	}
	t.UUID, t.NodeUUID = u, node
	return t, nil
}

// ApplyTarget patches a copy of t and returns it.
func ApplyTarget(t *model.VolumeTarget, ops []jsonpatch.Op) (*model.VolumeTarget, error) {
	return apply(TargetCatalogue, t, ops, func(t *target) *string { return &t.NodeUUID })
}

// RenderTarget is the JSON value of a target, every field or only fields
// (plus links), with its properties masked (the stored value keeps its
// credentials).
func RenderTarget(base string, t *model.VolumeTarget, fields []string) any {
	return TargetCatalogue.Render(view[target](base, fields), t)
}

// AppendTarget appends the JSON of RenderTarget(base, t, fields).
func AppendTarget(buf []byte, base string, t *model.VolumeTarget, fields []string) ([]byte, error) {
	vw := view[target](base, fields)
	return TargetCatalogue.AppendJSON(buf, &vw, t)
}
