package apiservice

import (
	"context"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/jsonpatch"
	"github.com/ferricbm/ferric/api-service/volume"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/rpc"
)

// volumeObject binds the single-object handlers to connectors (T
// model.VolumeConnector, A rpc.VolumeConnectorArgs) or targets.
type volumeObject[T, A any] struct {
	find   func(c echo.Context, id string) (*T, error)
	decode func(body map[string]any) (*T, error)
	apply  func(item *T, ops []jsonpatch.Op) (*T, error)
	render func(base string, item *T, fields []string) any
	insert func(ctx context.Context, item *T) error
	// node gives an item's node_uuid and the place of its node id.
	node func(item *T) (string, *int64)
	// args wraps an item for the conductor's update and destroy calls.
	args    func(item T) A
	update  func(api rpc.ConductorAPI, ctx context.Context, args A) (T, error)
	destroy func(api rpc.ConductorAPI, ctx context.Context, args A) error
}

// volumeResources describes connectors and targets to the generic handlers.
func (s *Server) volumeResources() (resource[model.VolumeConnector], resource[model.VolumeTarget]) {
	connectors := volumeResource(s, s.connectorCollection(), volumeObject[model.VolumeConnector, rpc.VolumeConnectorArgs]{find: s.findConnector,
		decode: volume.DecodeConnector, apply: volume.ApplyConnector, render: volume.RenderConnector, insert: s.store.CreateVolumeConnector,
		node:   func(vc *model.VolumeConnector) (string, *int64) { return vc.NodeUUID, &vc.NodeID },
		args:   func(vc model.VolumeConnector) rpc.VolumeConnectorArgs { return rpc.VolumeConnectorArgs{Connector: vc} },
		update: rpc.ConductorAPI.UpdateVolumeConnector, destroy: rpc.ConductorAPI.DestroyVolumeConnector})
	targets := volumeResource(s, s.targetCollection(), volumeObject[model.VolumeTarget, rpc.VolumeTargetArgs]{find: s.findTarget,
		decode: volume.DecodeTarget, apply: volume.ApplyTarget, render: volume.RenderTarget, insert: s.store.CreateVolumeTarget,
		node:   func(vt *model.VolumeTarget) (string, *int64) { return vt.NodeUUID, &vt.NodeID },
		args:   func(vt model.VolumeTarget) rpc.VolumeTargetArgs { return rpc.VolumeTargetArgs{Target: vt} },
		update: rpc.ConductorAPI.UpdateVolumeTarget, destroy: rpc.ConductorAPI.DestroyVolumeTarget})
	return connectors, targets
}

// volumeResource describes connectors or targets to the generic handlers.
// Creation writes straight to the database: the unique indexes arbitrate
// between concurrent creators and nothing on the node has to change.
// Updates and deletions go to the node's conductor, which takes the lock
// and enforces the power-state rule.
func volumeResource[T, A any](s *Server, vc volumeCollection[T], o volumeObject[T, A]) resource[T] {
	return resource[T]{
		param:            "id",
		find:             o.find,
		checkFields:      func(_ echo.Context, fields []string) error { return vc.res.CheckFields(fields) },
		fieldsBeforeFind: true,
		create: func(c echo.Context, body map[string]any) (*T, error) {
			item, err := o.decode(body)
			if err != nil {
				return nil, err
			}
			nodeUUID, nodeID := o.node(item)
			n, err := s.volumeOwner(c, nodeUUID)
			if err != nil {
				return nil, err
			}
			*nodeID = n.ID
			return item, o.insert(c.Request().Context(), item)
		},
		location: func(item *T) string { return "/v1/" + vc.res.Path + "/" + vc.uuid(item) },
		apply:    func(_ echo.Context, item *T, ops []jsonpatch.Op) (*T, error) { return o.apply(item, ops) },
		update: onConductor(s, func(c echo.Context, patched *T) (*model.Node, error) {
			nodeUUID, _ := o.node(patched)
			return s.patchOwner(c, nodeUUID)
		}, func(ctx context.Context, api rpc.ConductorAPI, item T) (T, error) {
			return o.update(api, ctx, o.args(item))
		}),
		destroy: destroyOnConductor(s, func(item *T) int64 {
			_, nodeID := o.node(item)
			return *nodeID
		}, func(ctx context.Context, api rpc.ConductorAPI, item T) error {
			return o.destroy(api, ctx, o.args(item))
		}),
		render: func(c echo.Context, item *T, fields []string) any { return o.render(s.baseURL(c), item, fields) },
	}
}
