// Command ferric-lab runs a virtual lab for trying Ferric by hand: N lab
// nodes (ipmi_sim BMC, disk file, MAC; ferric-agent booted from the PXE
// configuration the conductor writes; with -bmc ilo or redfish a simulated
// iLO instead, booting ferric-agent from virtual media) plus ferric-api and ferric-conductor
// over RabbitMQ and a MySQL database of its own. It prints how to enrol and
// deploy the nodes and runs until interrupted, then stops everything it
// started and drops the database. `make lab` runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ferricbm/ferric/tests/harness"
	"github.com/ferricbm/ferric/tests/lab"
)

func main() {
	nodes := flag.Int("nodes", 2, "number of lab nodes")
	diskMiB := flag.Int64("disk-mib", 3072, "size of each node's (sparse) disk in MiB")
	keep := flag.Bool("keep", false, "keep the working directory (logs, disks) after exit")
	mode := flag.String("mode", lab.ModeAuto, "how the nodes' ramdisks call back: auto (agent heartbeats) or callback (pass_deploy_info, as the bash ramdisk)")
	bmcKind := flag.String("bmc", lab.BMCIPMI, "the nodes' BMC: ipmi (PXE boot), ilo (iLO 4, RIBCL) or redfish (iLO 5, Redfish); ilo and redfish deploy by virtual media")
	swift := flag.Bool("swift", false, "publish virtual media in the Swift all-in-one (scripts/swift-aio.sh) instead of the conductor's web server")
	flag.Parse()
	if *bmcKind != lab.BMCIPMI && *bmcKind != lab.BMCILO && *bmcKind != lab.BMCRedfish {
		fmt.Fprintf(os.Stderr, "ferric-lab: -bmc must be %s, %s or %s\n", lab.BMCIPMI, lab.BMCILO, lab.BMCRedfish)
		os.Exit(2)
	}
	if *mode != lab.ModeAuto && *mode != lab.ModeCallback {
		fmt.Fprintf(os.Stderr, "ferric-lab: -mode must be %s or %s\n", lab.ModeAuto, lab.ModeCallback)
		os.Exit(2)
	}
	if err := run(options{nodes: *nodes, diskSize: *diskMiB << 20, mode: *mode, bmc: *bmcKind, swift: *swift, keep: *keep}); err != nil {
		fmt.Fprintln(os.Stderr, "ferric-lab:", err)
		os.Exit(1)
	}
}

type options struct {
	nodes    int
	diskSize int64
	mode     string
	bmc      string
	swift    bool
	keep     bool
}

func run(o options) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var cleanups []func() error
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			err = errors.Join(err, cleanups[i]())
		}
	}()

	root, err := harness.RepoRoot()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "ferric-lab-run-")
	if err != nil {
		return err
	}
	cleanups = append(cleanups, func() error {
		if o.keep {
			fmt.Println("kept", dir)
			return nil
		}
		return os.RemoveAll(dir)
	})
	bin := filepath.Join(dir, "bin")
	fmt.Println("building ferric-api, ferric-conductor and ferric-agent ...")
	if _, err := harness.Build(bin); err != nil {
		return err
	}
	agent, err := lab.BuildAgent(ctx, root, bin)
	if err != nil {
		return err
	}
	dirs, err := lab.MakeDirs(filepath.Join(dir, "conductor"))
	if err != nil {
		return err
	}
	kernel, ramdisk := filepath.Join(dir, "deploy.kernel"), filepath.Join(dir, "deploy.initramfs")
	for _, f := range []string{kernel, ramdisk} {
		if err := os.WriteFile(f, []byte("placeholder: the lab runs ferric-agent instead\n"), 0o644); err != nil {
			return err
		}
	}
	portalPort, err := lab.FreeTCPPort()
	if err != nil {
		return err
	}
	httpPort, err := lab.FreeTCPPort()
	if err != nil {
		return err
	}

	db, err := harness.CreateDatabase(ctx, "lab")
	if err != nil {
		return err
	}
	cleanups = append(cleanups, func() error { return db.Drop(context.Background()) })
	timings := harness.FastTimings
	timings.CallbackTimeout = 10 * time.Minute
	base := lab.Configure(harness.BaseConfig(db.Connection(), "amqp", timings), dirs, portalPort, httpPort).
		Set("conductor", "file_url_allowed_paths", []string{dir})
	deployISO := ""
	if o.bmc != lab.BMCIPMI {
		// The BMC fetches the deploy ISO itself: the boot file server
		// serves it.
		if err := lab.DeployISO(ctx, root, filepath.Join(dirs.HTTPRoot, "deploy.iso")); err != nil {
			return err
		}
		deployISO = fmt.Sprintf("http://127.0.0.1:%d/deploy.iso", httpPort)
		base = lab.ConfigureVMedia(base)
		if o.swift {
			sw, err := lab.StartSwift(ctx, root)
			if err != nil {
				return err
			}
			base = lab.WithSwift(base, sw, "ferric-lab-"+filepath.Base(dir))
		}
	}
	d := harness.NewDeployment(bin, dir, base)
	cleanups = append(cleanups, func() error { return d.StopAll(20 * time.Second) })
	if err := d.DBSync(ctx); err != nil {
		return err
	}
	if _, err := d.StartAPI(ctx, "api"); err != nil {
		return err
	}
	lab.SetAPIURL(d.Base, d.APIURL)
	if _, err := d.StartConductor(ctx, "conductor"); err != nil {
		return err
	}
	l, err := lab.Start(ctx, lab.Options{Nodes: o.nodes, AgentBinary: agent, TFTPRoot: dirs.TFTPRoot,
		DiskSize: o.diskSize, PortalPort: portalPort, TempDir: dir, BMCKind: o.bmc})
	if err != nil {
		return err
	}
	cleanups = append(cleanups, l.Stop)
	for _, n := range l.Nodes {
		n.SetMode(o.mode)
	}

	if o.bmc == lab.BMCIPMI {
		printUsage(d, l, dir, kernel, ramdisk)
	} else {
		printVMediaUsage(d, l, dir, deployISO)
	}
	<-ctx.Done()
	fmt.Println("\nstopping the lab ...")
	return nil
}

func printUsage(d *harness.Deployment, l *lab.Lab, dir, kernel, ramdisk string) {
	var b strings.Builder
	fmt.Fprintf(&b, "\nFerric lab is running (Ctrl-C stops it and removes everything).\n\n")
	fmt.Fprintf(&b, "API:         %s   (no authentication)\n", d.APIURL)
	fmt.Fprintf(&b, "logs:        %s/{api,conductor}.log\n", dir)
	fmt.Fprintf(&b, "  export OS_ENDPOINT=%s OS_AUTH_TYPE=none   # for the openstack baremetal CLI\n\n", d.APIURL)
	for _, n := range l.Nodes {
		fmt.Fprintf(&b, "%s: MAC %s, address %s, BMC %s:%d (%s / %s), disk %s\n   agent log %s\n",
			n.Name, n.MAC, n.Address, n.BMC.Address, n.BMC.Port, n.BMC.Username, n.BMC.Password, n.Disk, n.AgentLog())
		fmt.Fprintf(&b, "   curl -s -X POST %s/v1/nodes -H 'Content-Type: application/json' -H 'X-OpenStack-Ironic-API-Version: latest' \\\n"+
			"     -d '{\"name\": \"%s\", \"driver\": \"ipmi\", \"driver_info\": {\"ipmi_address\": \"%s\", \"ipmi_port\": %d, "+
			"\"ipmi_username\": \"%s\", \"ipmi_password\": \"%s\", \"deploy_kernel\": \"file://%s\", \"deploy_ramdisk\": \"file://%s\"}}'\n",
			d.APIURL, n.Name, n.BMC.Address, n.BMC.Port, n.BMC.Username, n.BMC.Password, kernel, ramdisk)
		fmt.Fprintf(&b, "   curl -s -X POST %s/v1/ports -H 'Content-Type: application/json' -d '{\"node_uuid\": \"<uuid>\", \"address\": \"%s\"}'\n\n",
			d.APIURL, n.MAC)
	}
	fmt.Fprintf(&b, "Local files (file:// or absolute paths) are read only under %s ([conductor] file_url_allowed_paths).\n", dir)
	b.WriteString("Then: manage, provide, set instance_info/image_source (an http:// or file:// qcow2 or raw image;\n" +
		"a partition image also needs kernel, ramdisk and root_gb, and GRUB inside it unless\n" +
		"capabilities has boot_option netboot) and deploy (target active). The lab boots\n" +
		"ferric-agent on the node's own address when the BMC powers it on with boot device pxe; any number\n" +
		"of nodes can deploy at once. For the callback-only ramdisk (pass_deploy_info) create the node\n" +
		"with \"vendor_interface\": \"iscsi\".\n")
	fmt.Print(b.String())
}

// printVMediaUsage tells how to enrol and deploy the lab's iLO or Redfish
// nodes, with ferricctl and with the openstack CLI.
func printVMediaUsage(d *harness.Deployment, l *lab.Lab, dir, deployISO string) {
	var b strings.Builder
	fmt.Fprintf(&b, "\nFerric lab is running (Ctrl-C stops it and removes everything).\n\n")
	fmt.Fprintf(&b, "API:         %s   (no authentication)\n", d.APIURL)
	fmt.Fprintf(&b, "logs:        %s/{api,conductor}.log\n", dir)
	fmt.Fprintf(&b, "deploy ISO:  %s\n", deployISO)
	fmt.Fprintf(&b, "  export OS_ENDPOINT=%s OS_AUTH_TYPE=none   # for ferricctl and the openstack baremetal CLI\n\n", d.APIURL)
	for _, n := range l.Nodes {
		fmt.Fprintf(&b, "%s: MAC %s, address %s, %s BMC %s port %d (%s / %s), CA file %s, disk %s\n   agent log %s\n",
			n.Name, n.MAC, n.Address, n.Driver(), n.Address, n.ILO.Port, n.ILO.Username, n.ILO.Password, n.ILO.CAFile, n.Disk, n.AgentLog())
		info := n.VMediaDriverInfo(deployISO)
		keys := slices.Sorted(maps.Keys(info))
		var flags []string
		for _, k := range keys {
			flags = append(flags, fmt.Sprintf("--driver-info %s=%v", k, info[k]))
		}
		fmt.Fprintf(&b, "   ferricctl node create --driver %s --name %s %s\n", n.Driver(), n.Name, strings.Join(flags, " "))
		fmt.Fprintf(&b, "   ferricctl port create %s --node <uuid>\n", n.MAC)
		fmt.Fprintf(&b, "   ferricctl node manage %[1]s && ferricctl node provide %[1]s\n", n.Name)
		fmt.Fprintf(&b, "   ferricctl node set %s --instance-info image_source=<http:// or file:// image> --instance-info root_gb=1 --instance-info capabilities='{\"boot_option\": \"local\"}'\n", n.Name)
		fmt.Fprintf(&b, "   ferricctl node deploy %s\n\n", n.Name)
	}
	fmt.Fprintf(&b, "Local files (file:// or absolute paths) are read only under %s ([conductor] file_url_allowed_paths).\n", dir)
	b.WriteString("The node's iLO boots ferric-agent from the deploy ISO and the parameter floppy the conductor\n" +
		"inserts; see docs/ilo.md for the whole walkthrough.\n")
	fmt.Print(b.String())
}
