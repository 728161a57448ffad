// Command bmc-hook is the chassis_control program of the lab's simulated
// BMCs. ipmi_sim runs it as
//
//	bmc-hook STATEDIR DEV get power|boot ...
//	bmc-hook STATEDIR DEV set power 0|1 | reset 1 | boot DEV | shutdown 1
//
// It keeps the machine's power and boot device in STATEDIR/state.json (the
// truth the lab reads) and appends every change it was asked to make to
// STATEDIR/events.log, one JSON object per line, for the lab to follow.
package main

import (
	"fmt"
	"os"

	"github.com/ferricbm/ferric/tests/lab/bmc/internal/state"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bmc-hook:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) < 3 {
		return fmt.Errorf("usage: bmc-hook STATEDIR DEV get|set ...")
	}
	dir, verb, rest := args[0], args[2], args[3:]
	switch verb {
	case "get":
		s, err := state.Read(dir)
		if err != nil {
			return err
		}
		for _, what := range rest {
			switch what {
			case "power":
				v := 0
				if s.Power {
					v = 1
				}
				fmt.Printf("power:%d\n", v)
			case "boot":
				fmt.Printf("boot:%s\n", s.Boot)
			}
		}
		return nil
	case "set":
		if len(rest)%2 != 0 {
			return fmt.Errorf("set wants name value pairs, got %q", rest)
		}
		for i := 0; i < len(rest); i += 2 {
			if err := state.Apply(dir, rest[i], rest[i+1]); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown verb %q", verb)
}
