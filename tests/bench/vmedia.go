package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ferricbm/ferric/conductor/bmc"
	"github.com/ferricbm/ferric/conductor/bmc/ilotest"
	"github.com/ferricbm/ferric/conductor/bmc/transport"
	"github.com/ferricbm/ferric/conductor/driver/drivertest"
	"github.com/ferricbm/ferric/conductor/driver/ilo"
	"github.com/ferricbm/ferric/conductor/driver/pxe"
	"github.com/ferricbm/ferric/conductor/vmedia/publish"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/deploy/bootiso"
	"github.com/ferricbm/ferric/deploy/floppy"
	"github.com/ferricbm/ferric/deploy/image"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
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
// and later ones; then what the boot interface takes to give a node that
// ISO, built or shared (benchSharedBootISO).
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
	shared, err := benchSharedBootISO(ctx, work, kernel, ramdisk)
	if err != nil {
		return nil, err
	}
	return append([]row{
		{"parameter floppy build (1.44 MB FAT12, p50 / p99 of 200)", fmt.Sprintf("%s / %s", round(pct(floppyTimes, 0.5)), round(pct(floppyTimes, 0.99))), "-", ""},
		{"deploy ISO build (placeholder kernel and ramdisk, BIOS + UEFI)", round(deployTook).String(), "-", ""},
		{"boot ISO build, cold (10 MiB kernel + 60 MiB ramdisk just written)", round(builds[0]).String(), "-", ""},
		{"boot ISO build, inputs in the page cache (median of 3)", round(median(builds[1:])).String(), "-", ""},
	}, shared...), nil
}

// benchVMediaDeploy starts a rig of iLO 4 lab nodes, times power state
// reads against one node's iLO over RIBCL and one Redfish iLO, then
// deploys every node at once.
func benchVMediaDeploy(ctx context.Context, work string) ([]row, error) {
	img, err := serveRandomImage(ctx, work, *vmediaImageSize)
	if err != nil {
		return nil, err
	}
	defer img.close()

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

	api := rig.api
	uuids := make([]string, len(rig.lab.Nodes))
	for i, n := range rig.lab.Nodes {
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
	measured, cost, err := rig.deployAll(ctx, uuids, img, "iLO nodes by virtual media")
	if err != nil {
		return nil, err
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
	defer func() { _ = redfishLab.Stop() }()
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

// bootISONodes is how many nodes share one boot ISO in each round of
// benchSharedBootISO: the first builds it, the others find it.
const bootISONodes = 4

// benchSharedBootISO times the ilo boot interface's PrepareInstance for
// netbooted partition-image nodes that all deploy the same image, kernel
// (10 MiB) and ramdisk (60 MiB) to the same root: for the first node it
// fetches both, builds and publishes the ISO while holding its boot_isos
// row (MySQL); for the others the ISO exists and only its usage_count
// grows. Both then insert the ISO into a fake iLO (ilotest, which
// HEAD-checks the URL) and make the CD the persistent boot device. Media
// go on the conductor's web-server publisher. Three rounds; each ends
// with every node's CleanUpInstance, the last of which deletes the ISO.
func benchSharedBootISO(ctx context.Context, work, kernel, ramdisk string) ([]row, error) {
	database, err := harness.CreateDatabase(ctx, "benchbootiso")
	if err != nil {
		return nil, err
	}
	defer func() { _ = database.Drop(context.Background()) }()
	store, err := db.Open(ctx, database.Connection())
	if err != nil {
		return nil, err
	}
	defer store.Close()
	if err := store.Upgrade(ctx); err != nil {
		return nil, err
	}
	httpRoot := filepath.Join(work, "bootiso-http")
	if err := os.MkdirAll(httpRoot, 0o755); err != nil {
		return nil, err
	}
	for _, f := range []string{kernel, ramdisk} {
		if err := os.Rename(f, filepath.Join(httpRoot, filepath.Base(f))); err != nil {
			return nil, err
		}
	}
	port, err := lab.FreeTCPPort()
	if err != nil {
		return nil, err
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	web, err := publish.NewWebServer(filepath.Join(httpRoot, "vmedia"), base)
	if err != nil {
		return nil, err
	}
	// The bench serves its kernels and ramdisks from 127.0.0.1.
	loopback := image.Destinations{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	files := pxe.New(pxe.Options{TFTPRoot: filepath.Join(work, "bootiso-tftp"), HTTPRoot: httpRoot, HTTPURL: base, Media: web,
		Downloads: loopback})
	if err := files.StartService(ctx); err != nil {
		return nil, err
	}
	defer func() { _ = files.StopService(context.Background()) }()
	hw := ilo.New(ilo.OptionsFrom(config.Defaults(), nil))
	b := hw.Boot(hw.ILO(), ilo.BootOptions{MediaLifetime: time.Minute, Downloads: loopback, BootISOs: store, Fetch: files.Fetch,
		AppendParams: "nofb nomodeset", WorkDir: work,
		Publisher: func(context.Context) (publish.Publisher, error) { return web, nil }})

	const user, password = "admin", "bench-ilo-pw"
	rootUUID := harness.NewUUID()
	tasks := make([]*drivertest.Task, bootISONodes)
	for i := range tasks {
		srv, err := ilotest.Start("127.0.0.1:0", ilotest.Options{Username: user, Password: password, Model: "ProLiant DL360 Gen9"})
		if err != nil {
			return nil, err
		}
		defer srv.Close()
		// Each iLO has its own certificate, written to a folder of its own.
		caDir := filepath.Join(work, fmt.Sprintf("ilo-%d", i))
		if err := os.MkdirAll(caDir, 0o755); err != nil {
			return nil, err
		}
		ca, err := srv.WriteCAFile(caDir)
		if err != nil {
			return nil, err
		}
		st, boot := string(states.DeployWait), ilo.ILOBootName
		tasks[i] = drivertest.New(&model.Node{UUID: harness.NewUUID(), ProvisionState: &st, BootInterface: &boot,
			DriverInfo: model.JSONObject{"ilo_address": "127.0.0.1", "client_port": srv.Port, "ilo_username": user,
				"ilo_password": password, "ca_file": ca},
			InstanceInfo: model.JSONObject{"image_source": "http://images/part.img",
				"kernel": base + "/" + filepath.Base(kernel), "ramdisk": base + "/" + filepath.Base(ramdisk),
				"capabilities": map[string]any{"boot_option": "netboot"}},
			DriverInternalInfo: model.JSONObject{"root_uuid_or_disk_id": rootUUID}})
	}

	fmt.Printf("giving %d netbooted nodes one shared boot ISO, 3 rounds (load average %s) ...\n", bootISONodes, loadAverage())
	var cold, cached []time.Duration
	for range 3 {
		for i, t := range tasks {
			start := time.Now()
			if err := b.PrepareInstance(ctx, t); err != nil {
				return nil, err
			}
			if took := time.Since(start); i == 0 {
				cold = append(cold, took)
			} else {
				cached = append(cached, took)
			}
		}
		// Every node must boot the ISO the first one published.
		first, _ := tasks[0].Node().InstanceInfo["ilo_boot_iso"].(string)
		for _, t := range tasks {
			if got, _ := t.Node().InstanceInfo["ilo_boot_iso"].(string); got != first || !strings.HasPrefix(got, "published:") {
				return nil, fmt.Errorf("node %s boots %q, the first node %q: the ISO was not shared", t.Node().UUID, got, first)
			}
		}
		for _, t := range tasks {
			if err := b.CleanUpInstance(ctx, t); err != nil {
				return nil, err
			}
		}
	}
	return []row{
		{"boot ISO via PrepareInstance, cold (fetch, build, publish, count, insert; median of 3)",
			round(median(cold)).String(), "-", ""},
		{fmt.Sprintf("boot ISO via PrepareInstance, shared ISO exists (count, insert; median of %d)", len(cached)),
			round(median(cached)).String(), "-", ""},
	}, nil
}
