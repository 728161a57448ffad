package rpc

import "github.com/ferricbm/ferric/pkg/model"

// AllocationArgs carries an allocation: a new one to store and process,
// or a stored one to destroy.
type AllocationArgs struct {
	Allocation model.Allocation `json:"allocation"`
}
