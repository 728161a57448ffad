package main

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
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
	img, err := serveRandomImage(ctx, work, *deployImageSize)
	if err != nil {
		return nil, err
	}
	defer img.close()

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
	uuids := make([]string, len(rig.lab.Nodes))
	for i, n := range rig.lab.Nodes {
		vendor := ""
		if i%2 == 1 {
			n.SetMode(lab.ModeCallback)
			vendor = "iscsi"
		}
		if uuids[i], err = enrolLabNode(ctx, rig.api, n, vendor, rig.deployImages); err != nil {
			return nil, err
		}
	}
	measured, cost, err := rig.deployAll(ctx, uuids, img, "nodes")
	if err != nil {
		return nil, err
	}
	written := float64(*deployImageSize) * float64(cost.deployed) / (1 << 20)
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
