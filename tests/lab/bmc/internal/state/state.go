// Package state is the simulated machine behind one lab BMC: its power and
// boot device, kept in a directory shared by the chassis_control hook
// (which ipmi_sim runs for every chassis command) and the lab process. An
// advisory lock orders their read-modify-write cycles.
package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

const (
	stateFile  = "state.json"
	lockFile   = "state.lock"
	EventsFile = "events.log"
)

// State is what the machine is doing. Boot uses ipmi_sim's names: pxe,
// default (disk), cdrom, bios, none.
type State struct {
	Power bool   `json:"power"`
	Boot  string `json:"boot"`
	// IgnoreShutdown makes the simulated OS ignore the ACPI soft-off
	// request (a hung or absent OS), so soft power off never completes.
	IgnoreShutdown bool `json:"ignore_shutdown"`
}

// Event is one change a BMC command asked for, with the machine's state
// right after it.
type Event struct {
	Time  time.Time `json:"time"`
	Kind  string    `json:"kind"`
	Value string    `json:"value"`
	Power bool      `json:"power"`
	Boot  string    `json:"boot"`
}

// Event kinds.
const (
	KindPower    = "power"
	KindReset    = "reset"
	KindBoot     = "boot"
	KindShutdown = "shutdown"
)

// Read returns the current state; a machine never written is off and
// boots from its default device.
func Read(dir string) (State, error) {
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return State{Boot: "default"}, nil
	}
	if err != nil {
		return State{}, err
	}
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return State{}, fmt.Errorf("%s: %w", stateFile, err)
	}
	return s, nil
}

// Update changes the state under the lock with change, which returns the
// event to record (nil for none).
func Update(dir string, change func(*State) (*Event, error)) error {
	lock, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock state: %w", err)
	}
	s, err := Read(dir)
	if err != nil {
		return err
	}
	ev, err := change(&s)
	if err != nil {
		return err
	}
	if err := write(dir, s); err != nil {
		return err
	}
	if ev == nil {
		return nil
	}
	ev.Time = time.Now().UTC()
	ev.Power, ev.Boot = s.Power, s.Boot
	line, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, EventsFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// write replaces the state file atomically, so a reader never sees half.
func write(dir string, s State) error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, stateFile))
}

// Apply performs one chassis control ipmi_sim passed to the hook.
func Apply(dir, name, value string) error {
	return Update(dir, func(s *State) (*Event, error) {
		ev := &Event{Kind: name, Value: value}
		switch name {
		case KindPower:
			switch value {
			case "0":
				s.Power, ev.Value = false, "off"
			case "1":
				s.Power, ev.Value = true, "on"
			default:
				return nil, fmt.Errorf("set power %q: want 0 or 1", value)
			}
		case KindReset:
			// A reset restarts a running machine; it stays powered.
		case KindBoot:
			s.Boot = value
		case KindShutdown:
			if !s.IgnoreShutdown {
				s.Power = false
			}
		default:
			return nil, fmt.Errorf("unknown chassis control %q", name)
		}
		return ev, nil
	})
}
