package model

import "github.com/ferricbm/ferric/pkg/states"

// The provision state columns stay plain nullable strings: the API's
// catalogue, the list filters and the migrations all speak the column's
// text. Code that reasons about the state machine reads and writes them
// through these methods, so inside the conductor a state is a states.State.

// State is the node's provision state ("" for NULL).
func (n *Node) State() states.State { return states.State(deref(n.ProvisionState)) }

// TargetState is the node's target provision state ("" for NULL).
func (n *Node) TargetState() states.State { return states.State(deref(n.TargetProvisionState)) }

// SetState stores a provision state and its target; "" stores NULL.
func (n *Node) SetState(state, target states.State) {
	n.ProvisionState, n.TargetProvisionState = stateColumn(state), stateColumn(target)
}

func stateColumn(s states.State) *string {
	if s == "" {
		return nil
	}
	v := string(s)
	return &v
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
