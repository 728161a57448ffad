package iscsideploy

import (
	"context"
	"fmt"
	"strings"

	"github.com/ferricbm/ferric/deploy/iscsi"
	"github.com/ferricbm/ferric/pkg/model"
)

// diskSerialKey records the serial number of the disk the last successful
// deploy wrote, for later deploys and cleans to check the target against.
const diskSerialKey = "disk_serial"

// expectedSerial is the serial number the node's disk must report: the
// root device hint when the operator gave one (it also replaces a recorded
// serial after a disk swap), else the one recorded at the last deploy.
func expectedSerial(n *model.Node) (serial, source string) {
	if hints, ok := n.Properties["root_device"].(map[string]any); ok {
		if s, ok := hints["serial"].(string); ok && s != "" {
			// Of Ironic's hint operators only equality names one disk.
			op, rest, _ := strings.Cut(strings.TrimSpace(s), " ")
			switch {
			case op == "s==" || op == "==":
				return strings.TrimSpace(rest), "the root device hint"
			case strings.HasPrefix(op, "<") || strings.ContainsAny(op, "=!<>"):
				return "", ""
			}
			return strings.TrimSpace(s), "the root device hint"
		}
	}
	if s, _ := n.DriverInternalInfo[diskSerialKey].(string); s != "" {
		return s, "the disk of the node's last deploy"
	}
	return "", ""
}

// checkIdentity compares the serial number the exported LUN reports (VPD
// page 0x80) with the node's known one, before anything is written or
// erased: a target that is not the node's disk (another node's, or an
// attacker's) fails the deploy or clean instead of receiving the image or
// being recorded as erased. verified is false when nothing is known to
// compare with; serial is what the LUN reports.
func checkIdentity(ctx context.Context, lun *iscsi.LUN, n *model.Node) (serial string, verified bool, err error) {
	id, err := lun.Identity(ctx)
	if err != nil {
		return "", false, err
	}
	want, source := expectedSerial(n)
	if want == "" {
		return id.Serial, false, nil
	}
	if !strings.EqualFold(strings.TrimSpace(want), id.Serial) {
		return id.Serial, false, fmt.Errorf("disk identity check failed: the exported LUN reports serial number %q, but %s says %q: it is not the node's disk",
			id.Serial, source, want)
	}
	return id.Serial, true, nil
}
