package apiservice

import (
	"context"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/jsonpatch"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/volume"
	"github.com/ferricbm/ferric/rpc"
)

// volumeResources describes connectors and targets to the generic handlers.
func (s *Server) volumeResources() (resource[model.VolumeConnector], resource[model.VolumeTarget]) {
	connectors := volumeResource(s, volume.Connectors, volumeObject[model.VolumeConnector, rpc.VolumeConnectorArgs]{find: s.findConnector,
		decode: volume.DecodeConnector, apply: volume.ApplyConnector, encode: volume.AppendConnector, sizeHint: volume.ConnectorCatalogue.SizeHint,
		insert: s.store.CreateVolumeConnector,
		ids:    func(vc *model.VolumeConnector) (string, string, *int64) { return vc.UUID, vc.NodeUUID, &vc.NodeID },
		args:   func(vc model.VolumeConnector) rpc.VolumeConnectorArgs { return rpc.VolumeConnectorArgs{Connector: vc} },
		patchArgs: func(uuid string, patch []byte, v microversion.Version) rpc.VolumeConnectorArgs {
			return rpc.VolumeConnectorArgs{VolumeConnectorID: uuid, Patch: patch, APIVersion: v.String()}
		},
		update: rpc.UpdateVolumeConnector, destroy: rpc.DestroyVolumeConnector})
	targets := volumeResource(s, volume.Targets, volumeObject[model.VolumeTarget, rpc.VolumeTargetArgs]{find: s.findTarget,
		decode: volume.DecodeTarget, apply: volume.ApplyTarget, encode: volume.AppendTarget, sizeHint: volume.TargetCatalogue.SizeHint,
		insert: s.store.CreateVolumeTarget,
		ids:    func(vt *model.VolumeTarget) (string, string, *int64) { return vt.UUID, vt.NodeUUID, &vt.NodeID },
		args:   func(vt model.VolumeTarget) rpc.VolumeTargetArgs { return rpc.VolumeTargetArgs{Target: vt} },
		patchArgs: func(uuid string, patch []byte, v microversion.Version) rpc.VolumeTargetArgs {
			return rpc.VolumeTargetArgs{VolumeTargetID: uuid, Patch: patch, APIVersion: v.String()}
		},
		update: rpc.UpdateVolumeTarget, destroy: rpc.DestroyVolumeTarget})
	return connectors, targets
}

// volumeObject is what tells connectors (T model.VolumeConnector, A
// rpc.VolumeConnectorArgs) from targets; no microversion changes either.
type volumeObject[T, A any] struct {
	find   func(c echo.Context, id string) (*T, error)
	decode func(body map[string]any) (*T, error)
	apply  func(item *T, ops []jsonpatch.Op) (*T, error)
	// encode appends an object's JSON to buf; base prefixes its links.
	encode   func(buf []byte, base string, item *T, fields []string) ([]byte, error)
	sizeHint int
	insert   func(ctx context.Context, item *T) error
	ids      func(item *T) (uuid, nodeUUID string, nodeID *int64)
	args     func(item T) A
	// patchArgs wraps an update as the client's patch, which the conductor
	// applies to the object it reads under the node locks.
	patchArgs func(uuid string, patch []byte, v microversion.Version) A
	update    rpc.Method[A, T]
	destroy   rpc.Command[A]
}

// volumeResource rejects bad ?fields before looking an object up, and
// answers an unknown node of a new object as an invalid node_uuid.
func volumeResource[T, A any](s *Server, res volume.Resource, o volumeObject[T, A]) resource[T] {
	return nodeResource(s, nodeObject[T, A]{param: "id", path: res.Path, find: o.find,
		checkFields:      func(fields []string, _ microversion.Version) error { return res.CheckFields(fields) },
		fieldsBeforeFind: true, newOwner: s.volumeOwner, patchOwner: s.patchOwner, insert: o.insert, ids: o.ids,
		decode: func(body map[string]any, _ microversion.Version) (*T, error) { return o.decode(body) },
		apply:  func(item *T, ops []jsonpatch.Op, _ microversion.Version) (*T, error) { return o.apply(item, ops) },
		encode: func(c echo.Context, buf []byte, item *T, fields []string) ([]byte, error) {
			return o.encode(buf, s.baseURL(c), item, fields)
		},
		sizeHint: o.sizeHint,
		args:     o.args, patchArgs: o.patchArgs, update: o.update, destroy: o.destroy})
}
