// Package chassis holds the chassis resource's API rules that do not need
// HTTP: the field catalogue, create body decoding, JSON-PATCH application
// and representation.
package chassis

import (
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/catalogue"
	"github.com/ferricbm/ferric/pkg/resource/jsonpatch"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/present"
)

// Field is one top-level chassis attribute; every one exists since 1.1.
type Field = catalogue.Field[model.Chassis]

var v1 = microversion.Min

// MaxDescription is the longest description a chassis may have.
const MaxDescription = 255

// Catalogue lists every chassis attribute.
var Catalogue = []Field{
	{Name: "uuid", Since: v1, Create: true, Sortable: true, Get: func(c *model.Chassis) any { return c.UUID }},
	{Name: "description", Since: v1, Create: true, Patch: true, Sortable: true,
		Get: func(c *model.Chassis) any { return present.Str(c.Description) },
		Set: catalogue.String("chassis", "description", MaxDescription, func(c *model.Chassis) **string { return &c.Description })},
	{Name: "extra", Since: v1, Create: true, Patch: true,
		Get:    func(c *model.Chassis) any { return present.Obj(c.Extra) },
		Object: func(c *model.Chassis) *model.JSONObject { return &c.Extra },
		Set:    catalogue.Object("chassis", "extra", func(c *model.Chassis) *model.JSONObject { return &c.Extra })},
	{Name: "created_at", Since: v1, Sortable: true, Get: func(c *model.Chassis) any { return present.Time(&c.CreatedAt) }},
	{Name: "updated_at", Since: v1, Sortable: true, Get: func(c *model.Chassis) any { return present.Time(c.UpdatedAt) }},
}

// Resource is the chassis catalogue and representation.
var Resource = catalogue.New(&catalogue.Catalogue[model.Chassis]{Resource: "chassis", Fields: Catalogue,
	Defaults: []string{"uuid", "description"},
	Path:     func(c *model.Chassis) string { return "chassis/" + c.UUID },
	UUID:     func(c *model.Chassis) string { return c.UUID },
	NewUUID:  func(c *model.Chassis) *string { return &c.UUID },
	SubLinks: []catalogue.SubLink{{Name: "nodes", Since: v1}},
	SizeHint: 512,
})

// DefaultListFields is the short field set of a non-detail chassis list.
var DefaultListFields = Resource.Defaults

// DecodeCreate turns a create body into an unsaved chassis.
func DecodeCreate(body map[string]any) (*model.Chassis, error) {
	c := &model.Chassis{Extra: model.JSONObject{}}
	if err := Resource.Decode(c, body, microversion.Min); err != nil {
		return nil, err
	}
	return c, nil
}

// Apply patches a copy of c and returns it; c itself is not changed.
func Apply(c *model.Chassis, ops []jsonpatch.Op) (*model.Chassis, error) {
	return Resource.Patch(c, ops, microversion.Min)
}
