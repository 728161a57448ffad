package harness

import (
	"context"
	"fmt"

	"github.com/ferricbm/ferric/db"
)

// Registry reads Ferric's own records in a deployment's database, for the
// few facts the API does not show at every microversion (which conductor
// deployed a node). It never writes.
type Registry struct {
	store *db.Store
}

// OpenRegistry connects to the deployment's database.
func OpenRegistry(ctx context.Context, connection string) (*Registry, error) {
	s, err := db.Open(ctx, connection)
	if err != nil {
		return nil, err
	}
	return &Registry{store: s}, nil
}

// Close releases the connection.
func (r *Registry) Close() error { return r.store.Close() }

// ConductorID is the registry id of the conductor named host.
func (r *Registry) ConductorID(ctx context.Context, host string) (int64, error) {
	c, err := r.store.GetConductor(ctx, host)
	if err != nil {
		return 0, fmt.Errorf("conductor %s: %w", host, err)
	}
	return c.ID, nil
}

// DeployedBy is the id of the conductor that last deployed or took over the
// node (its conductor affinity); ok is false when none has.
func (r *Registry) DeployedBy(ctx context.Context, nodeUUID string) (id int64, ok bool, err error) {
	n, err := r.store.GetNode(ctx, nodeUUID)
	if err != nil {
		return 0, false, fmt.Errorf("node %s: %w", nodeUUID, err)
	}
	if n.ConductorAffinity == nil {
		return 0, false, nil
	}
	return *n.ConductorAffinity, true, nil
}
