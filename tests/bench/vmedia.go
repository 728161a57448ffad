package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ferricbm/ferric/conductor/bmc"
	"github.com/ferricbm/ferric/conductor/bmc/transport"
	"github.com/ferricbm/ferric/deploy/bootiso"
	"github.com/ferricbm/ferric/deploy/floppy"
	"github.com/ferricbm/ferric/tests/harness"
	"github.com/ferricbm/ferric/tests/lab"
	"github.com/ferricbm/ferric/tests/lab/deployiso"
)

var (
	vmediaNodes     = flag.Int("vmedia-nodes", 4, "iLO lab nodes deployed at once by virtual media (20 for the issue's figure)")
	vmediaImageSize = flag.Int64("vmedia-image-size", 128<<20, "bytes of random data in the qcow2 whole-disk image the iLO lab nodes get")
	vmediaBMCCalls  = flag.Int("vmedia-bmc-calls", 200, "power state reads per protocol for the BMC latency")
)

// benchVMedia measures the virtual-media deploy: building the parameter
// floppy and boot ISOs, BMC call latency against the lab's simulated iLOs
// (RIBCL and Redfish over HTTPS), and -vmedia-nodes iLO lab nodes deployed
// at once with the ilo hardware type (media on the conductor's web
// server), with the conductor's CPU time.
func benchVMedia(ctx context.Context, s settings) ([]row, error) {
	if *vmediaNodes < 1 || *vmediaImageSize < 1<<20 || *vmediaBMCCalls < 1 {
		return nil, fmt.Errorf("-vmedia-nodes %d, -vmedia-image-size %d, -vmedia-bmc-calls %d: want at least 1 node, 1 MiB and 1 call",
			*vmediaNodes, *vmediaImageSize, *vmediaBMCCalls)
	}
	work, done, err := workDir(s, "ferric-bench-vmedia-")
	if err != nil {
		return nil, err
	}
	defer done()
	rows, err := benchMediaBuild(ctx, work)
	if err != nil {
		return nil, err
	}
	deployRows, err := benchVMediaDeploy(ctx, work)
	return append(rows, deployRows...), err
}

// benchMediaBuild times the parameter floppy and the ISOs: the deploy ISO
// (placeholder kernel and ramdisk) and a partition image's boot ISO with a
// 10 MiB kernel and 60 MiB ramdisk, the first build (inputs just written)
// and later ones.
func benchMediaBuild(ctx context.Context, work string) ([]row, error) {
	params := map[string]string{"deployment_id": harness.NewUUID(), "deployment_key": "0123456789abcdef0123456789abcdef",
		"iscsi_target_iqn": "iqn.2008-10.org.openstack:" + harness.NewUUID(), "ironic_api_url": "http://127.0.0.1:6385",
		"ipa-api-url": "http://127.0.0.1:6385", "BOOTIF": "01-52-54-00-12-34-56", "boot_option": "local", "disk": "cciss/c0d0,sda,hda,vda"}
	floppyTimes := make([]time.Duration, 200)
	for i := range floppyTimes {
		start := time.Now()
		if _, err := floppy.Parameters(params); err != nil {
			return nil, err
		}
		floppyTimes[i] = time.Since(start)
	}
	slices.Sort(floppyTimes)

	fmt.Println("building the deploy ISO and boot ISOs ...")
	deployISO := filepath.Join(work, "deploy.iso")
	start := time.Now()
	if err := deployiso.Build(ctx, deployISO); err != nil {
		return nil, err
	}
	deployTook := time.Since(start)

	kernel, ramdisk := filepath.Join(work, "kernel"), filepath.Join(work, "ramdisk")
	if err := randomImage(kernel, 10<<20); err != nil {
		return nil, err
	}
	if err := randomImage(ramdisk, 60<<20); err != nil {
		return nil, err
	}
	iso, err := os.Open(deployISO)
	if err != nil {
		return nil, err
	}
	efi, err := bootiso.EFIBootFromISO(iso)
	iso.Close()
	if err != nil {
		return nil, err
	}
	builds := make([]time.Duration, 4)
	for i := range builds {
		start := time.Now()
		if err := bootiso.Build(ctx, filepath.Join(work, "boot.iso"), bootiso.Options{Kernel: kernel, Ramdisk: ramdisk,
			KernelParams: bootiso.KernelParams(harness.NewUUID(), "nofb nomodeset"), EFI: efi}); err != nil {
			return nil, err
		}
		builds[i] = time.Since(start)
	}
	return []row{
		{"parameter floppy build (1.44 MB FAT12, p50 / p99 of 200)", fmt.Sprintf("%s / %s", round(pct(floppyTimes, 0.5)), round(pct(floppyTimes, 0.99))), "-", ""},
		{"deploy ISO build (placeholder kernel and ramdisk, BIOS + UEFI)", round(deployTook).String(), "-", ""},
		{"boot ISO build, cold (10 MiB kernel + 60 MiB ramdisk just written)", round(builds[0]).String(), "-", ""},
		{"boot ISO build, inputs in the page cache (median of 3)", round(median(builds[1:])).String(), "-", ""},
	}, nil
}

// benchVMediaDeploy starts a rig of iLO 4 lab nodes, times power state
// reads against one node's iLO over RIBCL and one Redfish iLO, then
// deploys every node at once.
func benchVMediaDeploy(ctx context.Context, work string) ([]row, error) {
	served := filepath.Join(work, "served")
	if err := os.MkdirAll(served, 0o755); err != nil {
		return nil, err
	}
	fmt.Printf("writing a %d MiB random qcow2 image ...\n", *vmediaImageSize>>20)
	raw := filepath.Join(work, "image.raw")
	if err := randomImage(raw, *vmediaImageSize); err != nil {
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

	rig, err := startLabRig(ctx, work, "benchvmedia", lab.BMCILO, *vmediaNodes, 2**vmediaImageSize+64<<20, func(c harness.Config) harness.Config {
		return lab.ConfigureVMedia(c).Set("conductor", "deploy_callback_timeout", labDeployTimeout).
			Set("conductor", "automated_clean", false).
			Set("conductor", "sync_power_state_interval", time.Hour)
	})
	if err != nil {
		return nil, err
	}
	defer rig.Close()
	root, err := harness.RepoRoot()
	if err != nil {
		return nil, err
	}
	if err := lab.DeployISO(ctx, root, filepath.Join(rig.httpRoot, "deploy.iso")); err != nil {
		return nil, err
	}
	deployISO := rig.httpURL + "/deploy.iso"

	rows, err := benchBMCLatency(ctx, work, rig.lab.Nodes[0])
	if err != nil {
		return nil, err
	}

	api, cond, l := rig.api, rig.conductor, rig.lab
	uuids := make([]string, len(l.Nodes))
	for i, n := range l.Nodes {
		body := map[string]any{"name": n.Name, "driver": n.Driver(), "driver_info": n.VMediaDriverInfo(deployISO)}
		var created struct {
			UUID string `json:"uuid"`
		}
		if err := api.do(ctx, http.MethodPost, "/v1/nodes", body, http.StatusCreated, &created); err != nil {
			return nil, err
		}
		if err := api.do(ctx, http.MethodPost, "/v1/ports", map[string]any{"node_uuid": created.UUID, "address": n.MAC},
			http.StatusCreated, nil); err != nil {
			return nil, err
		}
		if err := api.provision(ctx, created.UUID, "manage"); err != nil {
			return nil, err
		}
		uuids[i] = created.UUID
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

	fmt.Printf("deploying %d iLO nodes at once by virtual media (load average %s) ...\n", len(uuids), loadAverage())
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
	rows = append(rows, row{fmt.Sprintf("%d iLO lab nodes deployed at once by virtual media (%d MiB qcow2 whole-disk image)", len(uuids), *vmediaImageSize>>20),
		measured, "-", ""})
	rows = append(rows, row{"conductor CPU per node deployed", fmt.Sprintf("%.2f s", cost.cpu/float64(len(uuids))), "-", ""})
	return append(rows, cost.rows("virtual-media deploys")...), nil
}

// benchBMCLatency reads the power state of the node's iLO over RIBCL, and
// of a Redfish iLO of its own, -vmedia-bmc-calls times each, one at a
// time through the driver's client, as the conductor's power sync does.
func benchBMCLatency(ctx context.Context, work string, n *lab.Node) ([]row, error) {
	redfishLab, err := lab.Start(ctx, lab.Options{Nodes: 1, AgentBinary: "unused: never booted", TFTPRoot: work,
		PortalPort: 1, TempDir: work, DiskSize: 1 << 20, BMCKind: lab.BMCRedfish})
	if err != nil {
		return nil, err
	}
	defer redfishLab.Stop()
	var rows []row
	for _, node := range []*lab.Node{n, redfishLab.Nodes[0]} {
		c, err := bmc.Connect(ctx, bmc.Config{Address: node.Address, Port: node.ILO.Port, Username: node.ILO.Username,
			Password: node.ILO.Password, TLS: transport.TLS{CAFile: node.ILO.CAFile}})
		if err != nil {
			return nil, err
		}
		res := measure(ctx, *vmediaBMCCalls, 1, func(ctx context.Context, _ int) error {
			_, err := c.PowerState(ctx)
			return err
		})
		rows = append(rows, row{fmt.Sprintf("BMC power state read over %s (lab iLO, HTTPS), %d calls", c.Protocol(), *vmediaBMCCalls),
			res.String(), "-", ""})
	}
	return rows, nil
}
