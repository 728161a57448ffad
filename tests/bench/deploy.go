package main

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/ferricbm/ferric/tests/harness"
	"github.com/ferricbm/ferric/tests/lab"
)

var (
	deployLabNodes  = flag.Int("deploy-lab-nodes", 20, "lab nodes deployed at once (half through agent heartbeats, half through pass_deploy_info)")
	deployImageSize = flag.Int64("deploy-image-size", 128<<20, "bytes of random data in the qcow2 whole-disk image the lab nodes get")
)

// labDeployTimeout bounds the deploy of every node together.
const labDeployTimeout = 15 * time.Minute

// benchDeploy deploys -deploy-lab-nodes lab nodes at once with the ipmi
// hardware type (ipmi_sim BMCs, PXE, ferric-agent ramdisks, the image
// written by the conductor over iSCSI and read back) and reports the wall
// time until all are active, and what the conductor spent meanwhile: CPU
// time from /proc/<pid>/stat and its peak RSS (VmHWM, over its life).
func benchDeploy(ctx context.Context, s settings) ([]row, error) {
	if *deployLabNodes < 1 || *deployImageSize < 1<<20 {
		return nil, fmt.Errorf("-deploy-lab-nodes %d, -deploy-image-size %d: want at least 1 node and 1 MiB", *deployLabNodes, *deployImageSize)
	}
	work, done, err := workDir(s, "ferric-bench-deploy-")
	if err != nil {
		return nil, err
	}
	defer done()
	served := filepath.Join(work, "served")
	if err := os.MkdirAll(served, 0o755); err != nil {
		return nil, err
	}
	fmt.Printf("writing a %d MiB random qcow2 image ...\n", *deployImageSize>>20)
	raw := filepath.Join(work, "image.raw")
	if err := randomImage(raw, *deployImageSize); err != nil {
		return nil, err
	}
	qcow := filepath.Join(served, "image.qcow2")
	if err := command(ctx, "qemu-img", "convert", "-f", "raw", "-O", "qcow2", raw, qcow); err != nil {
		return nil, err
	}
	sum, err := md5sum(qcow)
	if err != nil {
		return nil, err
	}
	images := httptest.NewServer(http.FileServer(http.Dir(served)))
	defer images.Close()

	rig, err := startLabRig(ctx, work, "benchdeploy", lab.BMCIPMI, *deployLabNodes, 2**deployImageSize+64<<20, func(c harness.Config) harness.Config {
		return c.Set("conductor", "deploy_callback_timeout", labDeployTimeout).
			// Only the deploy is measured: nodes go straight to available.
			Set("conductor", "automated_clean", false).
			Set("conductor", "sync_power_state_interval", time.Hour)
	})
	if err != nil {
		return nil, err
	}
	defer rig.Close()
	api, cond, l := rig.api, rig.conductor, rig.lab

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
	waitAll := func(state string) error {
		if got, err := api.waitState(ctx, state, "", uuids, 2*time.Minute); err != nil || got != len(uuids) {
			return fmt.Errorf("%d of %d nodes reached %s: %v%s", got, len(uuids), state, err, stragglers(ctx, api, uuids, state))
		}
		return nil
	}
	if err := waitAll("manageable"); err != nil {
		return nil, err
	}
	for _, u := range uuids {
		if err := api.provision(ctx, u, "provide"); err != nil {
			return nil, err
		}
	}
	if err := waitAll("available"); err != nil {
		return nil, err
	}
	for _, u := range uuids {
		patch := []map[string]any{
			{"op": "add", "path": "/instance_info/image_source", "value": images.URL + "/image.qcow2"},
			{"op": "add", "path": "/instance_info/image_checksum", "value": sum},
		}
		if err := api.do(ctx, http.MethodPatch, "/v1/nodes/"+u, patch, http.StatusOK, nil); err != nil {
			return nil, err
		}
	}

	fmt.Printf("deploying %d nodes at once (load average %s) ...\n", len(uuids), loadAverage())
	var got int
	cost, err := measureConductor(cond.PID(), func() error {
		for _, u := range uuids {
			if err := api.provision(ctx, u, "active"); err != nil {
				return err
			}
		}
		got, err = api.waitState(ctx, "active", "deploy failed", uuids, labDeployTimeout)
		return err
	})
	if err != nil {
		return nil, err
	}
	fmt.Printf("load average %s\n", loadAverage())
	measured := cost.took.Round(10 * time.Millisecond).String()
	if got < len(uuids) {
		measured += fmt.Sprintf(" (%d nodes failed)", len(uuids)-got)
		fmt.Println(stragglers(ctx, api, uuids, "active"))
	}
	written := float64(*deployImageSize) * float64(got) / (1 << 20)
	return append([]row{
		{fmt.Sprintf("%d lab nodes deployed at once (%d MiB qcow2 whole-disk image)", len(uuids), *deployImageSize>>20),
			fmt.Sprintf("%s, %.0f MiB/s written overall", measured, written/cost.took.Seconds()), "-", ""},
	}, cost.rows("deploys")...), nil
}

func md5sum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := md5.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
