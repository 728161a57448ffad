// Package states is the node provision state machine. The transition table is
// data, (from, event) -> to, so it can be read against Ironic's and tested row
// by row; Transition computes the next state and target without side effects,
// leaving persistence and worker hand-off to the conductor's task manager.
package states

import (
	"strings"

	"github.com/ferricbm/ferric/pkg/errs"
)

// State is a node's provision state (or its target), spelled as the API
// returns it and the DB stores it. The model keeps the column a plain
// string; code that reasons about the state machine converts at the model
// (model.Node.State) so a state is never mixed up with an event or a verb.
type State string

// Provision states.
const (
	Enroll       State = "enroll"
	Verifying    State = "verifying"
	Manageable   State = "manageable"
	Available    State = "available"
	Active       State = "active"
	Deploying    State = "deploying"
	DeployWait   State = "wait call-back"
	DeployFail   State = "deploy failed"
	DeployHold   State = "deploy hold"
	Deleting     State = "deleting"
	Cleaning     State = "cleaning"
	CleanWait    State = "clean wait"
	CleanFail    State = "clean failed"
	CleanHold    State = "clean hold"
	Error        State = "error"
	Inspecting   State = "inspecting"
	InspectWait  State = "inspect wait"
	InspectFail  State = "inspect failed"
	Adopting     State = "adopting"
	AdoptFail    State = "adopt failed"
	Rescue       State = "rescue"
	Rescuing     State = "rescuing"
	RescueWait   State = "rescue wait"
	RescueFail   State = "rescue failed"
	Unrescuing   State = "unrescuing"
	UnrescueFail State = "unrescue failed"
	Servicing    State = "servicing"
	ServiceWait  State = "service wait"
	ServiceFail  State = "service failed"
	ServiceHold  State = "service hold"
)

// Pseudo-states: values that name an outcome or an API target but are never
// stored as a node's provision_state.
const (
	// Deleted is what tear down returns and the API's undeploy target.
	Deleted State = "deleted"
	// Rebuild is an API target and event only.
	Rebuild State = "rebuild"
	// DeployDone is Ironic's name for a deploy that finished synchronously:
	// a valid state name, though no node rests in it (drivers report a
	// driver.Result instead).
	DeployDone State = "deploy complete"
)

// Power states. PowerError deliberately shares its value with the provision
// state Error: both are "error" in Ironic.
const (
	PowerOn       = "power on"
	PowerOff      = "power off"
	Rebooting     = "rebooting"
	SoftPowerOff  = "soft power off"
	SoftRebooting = "soft rebooting"
	PowerError    = "error"
)

// Event is a state-machine event: what an operation or its outcome asks
// of the node's provision state.
type Event string

// Events of the state machine.
const (
	EventManage   Event = "manage"
	EventProvide  Event = "provide"
	EventClean    Event = "clean"
	EventInspect  Event = "inspect"
	EventAdopt    Event = "adopt"
	EventDeploy   Event = "deploy"
	EventRebuild  Event = "rebuild"
	EventDelete   Event = "delete"
	EventDone     Event = "done"
	EventFail     Event = "fail"
	EventWait     Event = "wait"
	EventResume   Event = "resume"
	EventAbort    Event = "abort"
	EventHold     Event = "hold"
	EventUnhold   Event = "unhold"
	EventRescue   Event = "rescue"
	EventUnrescue Event = "unrescue"
	EventService  Event = "service"
)

type edge struct {
	from  State
	event Event
}

// transitions is the complete machine (docs/states.md §3.1: Ironic's table
// extended with hold, rescue and service states). Anything absent is invalid.
var transitions = map[edge]State{
	{Enroll, EventManage}: Verifying,

	{Verifying, EventDone}: Manageable,
	{Verifying, EventFail}: Enroll,

	{Manageable, EventProvide}: Cleaning,
	{Manageable, EventClean}:   Cleaning,
	{Manageable, EventInspect}: Inspecting,
	{Manageable, EventAdopt}:   Adopting,

	{Available, EventManage}: Manageable,
	{Available, EventDeploy}: Deploying,

	{Deploying, EventDone}: Active,
	{Deploying, EventWait}: DeployWait,
	{Deploying, EventHold}: DeployHold,
	{Deploying, EventFail}: DeployFail,

	{DeployWait, EventResume}: Deploying,
	{DeployWait, EventHold}:   DeployHold,
	{DeployWait, EventFail}:   DeployFail,
	{DeployWait, EventAbort}:  DeployFail,
	{DeployWait, EventDelete}: Deleting,

	{DeployHold, EventUnhold}: DeployWait,
	{DeployHold, EventAbort}:  DeployFail,

	{DeployFail, EventDeploy}:  Deploying,
	{DeployFail, EventRebuild}: Deploying,
	{DeployFail, EventDelete}:  Deleting,

	{Active, EventRebuild}: Deploying,
	{Active, EventDelete}:  Deleting,
	{Active, EventRescue}:  Rescuing,
	{Active, EventService}: Servicing,

	{Error, EventRebuild}: Deploying,
	{Error, EventDelete}:  Deleting,

	{Deleting, EventClean}: Cleaning,
	{Deleting, EventFail}:  Error,

	{Cleaning, EventDone}:   Available,
	{Cleaning, EventManage}: Manageable,
	{Cleaning, EventWait}:   CleanWait,
	{Cleaning, EventHold}:   CleanHold,
	{Cleaning, EventFail}:   CleanFail,

	{CleanWait, EventResume}: Cleaning,
	{CleanWait, EventHold}:   CleanHold,
	{CleanWait, EventFail}:   CleanFail,
	{CleanWait, EventAbort}:  CleanFail,

	{CleanHold, EventUnhold}: CleanWait,
	{CleanHold, EventAbort}:  CleanFail,

	{CleanFail, EventManage}: Manageable,

	{Inspecting, EventDone}: Manageable,
	{Inspecting, EventWait}: InspectWait,
	{Inspecting, EventFail}: InspectFail,

	{InspectWait, EventDone}:   Manageable,
	{InspectWait, EventResume}: Inspecting,
	{InspectWait, EventFail}:   InspectFail,
	{InspectWait, EventAbort}:  InspectFail,

	{InspectFail, EventManage}:  Manageable,
	{InspectFail, EventInspect}: Inspecting,

	{Adopting, EventDone}: Active,
	{Adopting, EventFail}: AdoptFail,

	{AdoptFail, EventAdopt}:  Adopting,
	{AdoptFail, EventManage}: Manageable,

	{Rescuing, EventDone}: Rescue,
	{Rescuing, EventWait}: RescueWait,
	{Rescuing, EventFail}: RescueFail,

	{RescueWait, EventResume}: Rescuing,
	{RescueWait, EventFail}:   RescueFail,
	{RescueWait, EventAbort}:  RescueFail,
	{RescueWait, EventDelete}: Deleting,

	{Rescue, EventRescue}:   Rescuing,
	{Rescue, EventUnrescue}: Unrescuing,
	{Rescue, EventDelete}:   Deleting,

	{RescueFail, EventRescue}:   Rescuing,
	{RescueFail, EventUnrescue}: Unrescuing,
	{RescueFail, EventDelete}:   Deleting,

	{Unrescuing, EventDone}: Active,
	{Unrescuing, EventFail}: UnrescueFail,

	{UnrescueFail, EventRescue}:   Rescuing,
	{UnrescueFail, EventUnrescue}: Unrescuing,
	{UnrescueFail, EventDelete}:   Deleting,

	{Servicing, EventDone}: Active,
	{Servicing, EventWait}: ServiceWait,
	{Servicing, EventHold}: ServiceHold,
	{Servicing, EventFail}: ServiceFail,

	{ServiceWait, EventResume}: Servicing,
	{ServiceWait, EventHold}:   ServiceHold,
	{ServiceWait, EventFail}:   ServiceFail,
	{ServiceWait, EventAbort}:  ServiceFail,
	{ServiceWait, EventDelete}: Deleting,

	{ServiceHold, EventService}: Servicing,
	{ServiceHold, EventUnhold}:  ServiceWait,
	{ServiceHold, EventFail}:    ServiceFail,
	{ServiceHold, EventAbort}:   ServiceFail,

	{ServiceFail, EventService}: Servicing,
	{ServiceFail, EventRescue}:  Rescuing,
	{ServiceFail, EventWait}:    ServiceWait,
	{ServiceFail, EventHold}:    ServiceHold,
	{ServiceFail, EventDelete}:  Deleting,
	{ServiceFail, EventAbort}:   Active,
}

// defaultTargets is target_provision_state while a node sits in a
// non-stable state and the operation gave no explicit goal. Stable states
// have no entry: their target is NULL.
var defaultTargets = map[State]State{
	Verifying:    Manageable,
	Inspecting:   Manageable,
	InspectWait:  Manageable,
	InspectFail:  Manageable,
	Deploying:    Active,
	DeployWait:   Active,
	DeployHold:   Active,
	DeployFail:   Active,
	Deleting:     Available,
	Cleaning:     Available,
	CleanWait:    Available,
	CleanHold:    Available,
	CleanFail:    Available,
	Adopting:     Active,
	AdoptFail:    Active,
	Rescuing:     Rescue,
	RescueWait:   Rescue,
	RescueFail:   Rescue,
	Unrescuing:   Active,
	UnrescueFail: Active,
	Servicing:    Active,
	ServiceWait:  Active,
	ServiceHold:  Active,
	ServiceFail:  Active,
}

func set(members ...State) map[State]bool {
	m := make(map[State]bool, len(members))
	for _, s := range members {
		m[s] = true
	}
	return m
}

var (
	stable = set(Enroll, Manageable, Available, Active, Error, Rescue)

	// Failure and hold states are "resting": neither stable nor moving by
	// themselves, yet a node there may still be edited by the operator.
	updateAllowed = set(DeployFail, Inspecting, InspectFail, InspectWait, CleanFail, Error,
		Verifying, AdoptFail, RescueFail, UnrescueFail, ServiceHold, ServiceFail)

	deleteAllowed = set(Manageable, Enroll, AdoptFail)

	// Only while a ramdisk is expected to be running may it look its node up.
	lookupAllowed = set(Deploying, DeployWait, Cleaning, CleanWait, Inspecting, InspectWait,
		Rescuing, RescueWait)

	// Power sync takes the node lock; in these states that lock could make
	// a ramdisk callback fail, or the power credentials are not trusted yet.
	syncPowerExcluded = set(DeployWait, CleanWait, Enroll, AdoptFail)

	// States driven by an in-memory worker that died with its conductor.
	// Wait states are absent: the ramdisk's next callback resumes them.
	stuck = set(Deploying, Cleaning, Verifying, Inspecting, Adopting, Rescuing, Unrescuing,
		Deleting, Servicing)

	known = func() map[State]bool {
		m := set(Deleted, Rebuild, DeployDone)
		for e, to := range transitions {
			m[e.from] = true
			m[to] = true
		}
		return m
	}()
)

// verbs maps the API's provision targets to events. Internal events (done,
// fail, wait, resume, hold) are deliberately absent: clients cannot fire them.
var verbs = map[string]Event{
	string(Active):        EventDeploy,
	string(EventDeploy):   EventDeploy,
	string(Deleted):       EventDelete,
	"undeploy":            EventDelete,
	string(EventRebuild):  EventRebuild,
	string(EventManage):   EventManage,
	string(EventProvide):  EventProvide,
	string(EventInspect):  EventInspect,
	string(EventClean):    EventClean,
	string(EventAdopt):    EventAdopt,
	string(EventAbort):    EventAbort,
	string(EventRescue):   EventRescue,
	string(EventUnrescue): EventUnrescue,
	string(EventUnhold):   EventUnhold,
	string(EventService):  EventService,
}

// Transition fires event on a node in state current. It returns the next
// provision state and the target to store with it ("" meaning NULL): none
// once a stable state is reached, otherwise targetOverride when given (manual
// cleaning heads for manageable; a timed-out clean keeps its goal), else the
// next state's default target. An event the table does not hold for current
// is an InvalidState error and nothing changes.
func Transition(current State, event Event, targetOverride State) (next, target State, err error) {
	next, ok := transitions[edge{current, event}]
	if !ok {
		return "", "", errs.New(errs.KindInvalidState,
			"Can not transition from state %q on event %q (no defined transition).", current, event)
	}
	if stable[next] {
		return next, "", nil
	}
	if targetOverride != "" {
		return next, targetOverride, nil
	}
	return next, defaultTargets[next], nil
}

// Allowed reports whether event is valid in state current.
func Allowed(current State, event Event) bool {
	_, ok := transitions[edge{current, event}]
	return ok
}

// DefaultTarget is the goal a node in state s heads for when the operation
// named none; "" for stable states and unknown values.
func DefaultTarget(s State) State { return defaultTargets[s] }

// VerbEvent maps a provision target of PUT /v1/nodes/{n}/states/provision to
// the event it fires; ok is false for anything a client may not request.
func VerbEvent(target string) (event Event, ok bool) {
	event, ok = verbs[target]
	return event, ok
}

// IsStable reports whether s is a state that changes only on request.
func IsStable(s State) bool { return stable[s] }

// UpdateAllowed reports whether a node in state s may be edited (PATCH):
// any stable state, plus the failure/hold states an operator must fix up.
func UpdateAllowed(s State) bool { return stable[s] || updateAllowed[s] }

// DeleteAllowed reports whether a node in state s may be deleted.
// allowAvailable is [conductor] allow_deleting_available_nodes.
func DeleteAllowed(s State, allowAvailable bool) bool {
	return deleteAllowed[s] || (allowAvailable && s == Available)
}

// LookupAllowed reports whether the ramdisk lookup may return a node in
// state s (when [api] restrict_lookup is on).
func LookupAllowed(s State) bool { return lookupAllowed[s] }

// SyncPowerExcluded reports whether the periodic power sync skips s.
func SyncPowerExcluded(s State) bool { return syncPowerExcluded[s] }

// StuckFailState is where a node found in s after a conductor restart is
// moved: its fail transition. ok is false for states that can resume.
func StuckFailState(s State) (failState State, ok bool) {
	if !stuck[s] {
		return "", false
	}
	failState, ok = transitions[edge{s, EventFail}]
	return failState, ok
}

// Valid reports whether s, as a client spelled it (a list filter), is a
// known provision state value, counting the pseudo-states (deleted,
// rebuild, deploy complete) that Ironic also lists.
func Valid(s string) bool { return known[State(s)] }

// Join spells a list of states for a message, as strings.Join does.
func Join(ss []State, sep string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return strings.Join(out, sep)
}
