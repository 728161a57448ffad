package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ferricbm/ferric/tests/harness"
	"github.com/ferricbm/ferric/tests/lab"
)

var (
	cleanNodes    = flag.Int("clean-nodes", 20, "lab nodes cleaned at once (half with the agent, half with the callback-only ramdisk)")
	cleanDiskSize = flag.Int64("clean-disk-size", 128<<20, "bytes of each lab node's disk")
)

// cleanTimeout bounds the clean of every node together.
const cleanTimeout = 15 * time.Minute

// benchClean provides -clean-nodes lab nodes at once, each cleaned in-band
// (metadata wipe and a random plus a zero pass over its disk): half by the
// agent on the node's disk file, half by the conductor through the iSCSI
// target of the callback-only ramdisk. It reports the wall time until all
// are available, and what the conductor spent meanwhile: CPU time from
// /proc/<pid>/stat and its peak RSS (VmHWM).
func benchClean(ctx context.Context, s settings) ([]row, error) {
	if *cleanNodes < 1 {
		return nil, fmt.Errorf("-clean-nodes %d: want at least 1", *cleanNodes)
	}
	work, done, err := workDir(s, "ferric-bench-clean-")
	if err != nil {
		return nil, err
	}
	defer done()
	rig, err := startLabRig(ctx, work, "benchclean", lab.BMCIPMI, *cleanNodes, *cleanDiskSize, func(c harness.Config) harness.Config {
		return c.Set("conductor", "clean_callback_timeout", cleanTimeout)
	})
	if err != nil {
		return nil, err
	}
	defer rig.Close()
	api, l := rig.api, rig.lab

	uuids := make([]string, len(l.Nodes))
	for i, n := range l.Nodes {
		vendor := ""
		if i%2 == 1 {
			n.SetMode(lab.ModeCallback)
			vendor = "iscsi"
		}
		if uuids[i], err = enrolLabNode(ctx, api, n, vendor, rig.deployImages); err != nil {
			return nil, err
		}
	}
	if got, err := api.waitState(ctx, "manageable", "", uuids, 2*time.Minute); err != nil || got != len(uuids) {
		return nil, fmt.Errorf("%d of %d nodes reached manageable: %w%s", got, len(uuids), err, stragglers(ctx, api, uuids, "manageable"))
	}

	fmt.Printf("providing %d nodes at once (load average %s) ...\n", len(uuids), loadAverage())
	var got int
	cost, err := measureConductor(rig.conductor.PID(), func() error {
		for _, u := range uuids {
			if err := api.provision(ctx, u, "provide"); err != nil {
				return err
			}
		}
		got, err = api.waitState(ctx, "available", "clean failed", uuids, cleanTimeout)
		return err
	})
	if err != nil {
		return nil, err
	}
	measured := cost.took.Round(10 * time.Millisecond).String()
	if got < len(uuids) {
		measured += fmt.Sprintf(" (%d nodes did not reach available)", len(uuids)-got)
		fmt.Println(stragglers(ctx, api, uuids, "available"))
	}
	written := float64(*cleanDiskSize) * 2 * float64(got) / (1 << 20)
	return append([]row{
		{fmt.Sprintf("%d lab nodes cleaned at once (%d MiB disks, 2 passes)", len(uuids), *cleanDiskSize>>20),
			fmt.Sprintf("%s, %.0f MiB/s erased overall", measured, written/cost.took.Seconds()), "-", ""},
	}, cost.rows("cleans")...), nil
}

// enrolLabNode creates an ipmi node for a lab node, with its port, and
// asks for manage.
func enrolLabNode(ctx context.Context, api *apiClient, n *lab.Node, vendor, deployImages string) (string, error) {
	info := n.DriverInfo("file://"+deployImages+".kernel", "file://"+deployImages+".initramfs")
	for _, f := range []string{deployImages + ".kernel", deployImages + ".initramfs"} {
		if err := os.WriteFile(f, []byte("the lab runs ferric-agent"), 0o644); err != nil {
			return "", err
		}
	}
	body := map[string]any{"name": n.Name, "driver": "ipmi", "driver_info": info}
	if vendor != "" {
		body["vendor_interface"] = vendor
	}
	var created struct {
		UUID string `json:"uuid"`
	}
	if err := api.do(ctx, http.MethodPost, "/v1/nodes", body, http.StatusCreated, &created); err != nil {
		return "", err
	}
	if err := api.do(ctx, http.MethodPost, "/v1/ports", map[string]any{"node_uuid": created.UUID, "address": n.MAC},
		http.StatusCreated, nil); err != nil {
		return "", err
	}
	return created.UUID, api.provision(ctx, created.UUID, "manage")
}

// cpuSeconds is the user plus system CPU time of a process so far.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces; fields count from after it.
	_, rest, ok := strings.Cut(string(b), ") ")
	fields := strings.Fields(rest)
	if !ok || len(fields) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	// USER_HZ is 100 on every Linux this runs on.
	return (utime + stime) / 100, nil
}

// peakRSS is a process's VmHWM in bytes.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// stragglers describes the nodes not in state: their state and last error.
func stragglers(ctx context.Context, api *apiClient, uuids []string, state string) string {
	var b strings.Builder
	for _, u := range uuids {
		var n struct {
			ProvisionState string  `json:"provision_state"`
			LastError      *string `json:"last_error"`
		}
		if err := api.do(ctx, http.MethodGet, "/v1/nodes/"+u, nil, http.StatusOK, &n); err != nil {
			fmt.Fprintf(&b, "\n  %s: %v", u, err)
			continue
		}
		if n.ProvisionState != state {
			last := ""
			if n.LastError != nil {
				last = *n.LastError
			}
			fmt.Fprintf(&b, "\n  %s: %s: %s", u, n.ProvisionState, last)
		}
	}
	return b.String()
}
