package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ferricbm/ferric/cmd/ferricctl/internal/output"
)

// eraseEntry is one disk erased by one clean step, as the conductor
// records it in the node's driver_internal_info.erase_record.
type eraseEntry = map[string]any

func eraseField(name string) func(eraseEntry) any {
	return func(e eraseEntry) any { return e[name] }
}

var eraseRecordColumns = columns[eraseEntry]{
	{"step", "Step", eraseField("step")},
	{"device", "Device", eraseField("device")},
	{"method", "Method", eraseField("method")},
	{"passes", "Passes", eraseField("passes")},
	{"bytes", "Bytes", eraseField("bytes")},
	{"duration", "Duration (s)", eraseField("duration")},
	{"samples_checked", "Samples Checked", eraseField("samples_checked")},
	{"skipped", "Skipped", eraseField("skipped")},
	{"by", "By", eraseField("by")},
	{"at", "At", eraseField("at")},
}

func nodeEraseRecord(s *session) *cobra.Command {
	return &cobra.Command{
		Use:   "erase-record <node>",
		Short: "Show how the node's last clean erased its disks: one row per disk and erase step, verified",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := s.getNode(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			info, _ := n["driver_internal_info"].(map[string]any)
			raw, _ := info["erase_record"].([]any)
			items := make([]eraseEntry, 0, len(raw))
			for _, e := range raw {
				m, ok := e.(map[string]any)
				if !ok {
					return fmt.Errorf("node %s: unexpected erase record entry %v", args[0], e)
				}
				items = append(items, m)
			}
			return output.WriteList(s.stdout, s.out, eraseRecordColumns.list(items, eraseRecordColumns.names()))
		},
	}
}
