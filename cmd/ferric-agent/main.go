// Command ferric-agent is the deploy ramdisk's agent. It reads the deploy parameters
// from a kernel command line (the PXE append line, passed verbatim with -cmdline, or
// /proc/cmdline), merged with the virtual-media floppy's parameters.txt when the
// command line has boot_method=vmedia, and runs in one of two modes:
//
//   - agent (ipa-api-url given): looks the node up, heartbeats and serves the
//     ironic-python-agent command API (iSCSI export, disk erase clean steps, power off);
//   - callback (ironic_api_url, deployment_id, deployment_key, iscsi_target_iqn): the
//     bash ramdisk's flow: export the disk over iSCSI, POST pass_deploy_info, wait for
//     "done" on port 10000.
//
// Powering off (standby.power_off, or the end of the callback flow) releases the
// iSCSI target, runs -power-off-command if given, and exits 0.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/deploy/agent"
)

// listFlag collects a comma-separated, repeatable flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ferric-agent:", err)
		os.Exit(1)
	}
}

func run() error {
	fs := flag.NewFlagSet("ferric-agent", flag.ExitOnError)
	var (
		disks, macs listFlag
		cfg         agent.Config
	)
	cmdline := fs.String("cmdline", "", "kernel command line with the deploy parameters (default: the contents of -cmdline-file)")
	cmdlineFile := fs.String("cmdline-file", "/proc/cmdline", "file holding the kernel command line or parameters.txt")
	mode := fs.String("mode", "auto", "agent, callback, or auto (agent when ipa-api-url is given)")
	fs.Var(&disks, "disk", "disk to export and erase (block device or regular file); repeatable or comma-separated, the first is exported (default: first existing device of the disk= parameter)")
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:9999", "agent API listen address")
	fs.StringVar(&cfg.CallbackURL, "callback-url", "", "agent API URL sent in heartbeats (default http://<listen>, https:// with ipa-enable-auto-tls=1 on the command line)")
	fs.StringVar(&cfg.Portal, "iscsi-portal", "", "iSCSI portal ADDR:PORT tgtd listens on (default <listen host>:3260; portal_port of start_iscsi_target replaces the port)")
	fs.IntVar(&cfg.TgtdControlPort, "tgtd-control-port", 0, "tgtd control port (tgtd/tgtadm -C); a tgtd already answering there is reused")
	fs.StringVar(&cfg.TgtdLog, "tgtd-log", "", "file for tgtd's output")
	fs.Var(&macs, "mac", "MAC address to look the node up with; repeatable or comma-separated (BOOTIF= is added)")
	fs.StringVar(&cfg.Address, "address", "", "node IP address sent in pass_deploy_info (default the portal host)")
	fs.StringVar(&cfg.DoneListen, "done-listen", "", "where the callback ramdisk waits for \"done\" (default <address>:10000)")
	fs.DurationVar(&cfg.HeartbeatInterval, "heartbeat-interval", 0, "fixed heartbeat interval (default a random 0.3-0.6 x heartbeat_timeout from lookup)")
	fs.DurationVar(&cfg.LookupTimeout, "lookup-timeout", 5*time.Minute, "give up lookup (and callback retries) after this long")
	fs.DurationVar(&cfg.LookupBackoff, "lookup-backoff", time.Second, "first lookup retry delay, doubled on each failure")
	fs.DurationVar(&cfg.LookupMaxBackoff, "lookup-max-backoff", 30*time.Second, "longest lookup retry delay")
	fs.StringVar(&cfg.VirtualMediaDevice, "vmedia-device", "", "virtual-media floppy, read for parameters.txt when the command line has boot_method=vmedia, and never erased (default: the device labelled ir-vfd-dev or IR-VFD-DEV, else the one whose model says \"virtual media\")")
	vmediaTimeout := fs.Duration("vmedia-timeout", 2*time.Minute, "how long to wait for the virtual-media floppy to appear")
	authTokenFile := fs.String("auth-token-file", "", "file with a token sent as X-Auth-Token on callbacks")
	powerOffCmd := fs.String("power-off-command", "", "shell command run to power the node off (default: just exit)")
	fs.IntVar(&cfg.EraseBlockSize, "erase-block-size", 0, "erase write size in bytes (default 4 MiB)")
	fs.IntVar(&cfg.EraseWriters, "erase-writers", 0, "erase writes in flight (default 2)")
	corrupt := fs.Bool("test-fault-corrupt-before-verify", os.Getenv(corruptEnv) == "1",
		"FOR TESTS ONLY: after erase_devices overwrote a disk and before it verifies it, damage 4 KiB near its start, so the verification must fail; "+
			corruptEnv+"=1 in the environment sets it too (the virtual lab starts ramdisks with fixed flags)")
	fs.DurationVar(&cfg.Server.ReadTimeout, "read-timeout", time.Minute, "agent API: longest time to read one request, headers and body")
	fs.DurationVar(&cfg.Server.WriteTimeout, "write-timeout", 0, "agent API: longest time to write one response; 0 is no limit, as a command run with ?wait=true answers only when it ends")
	fs.DurationVar(&cfg.Server.IdleTimeout, "idle-timeout", 2*time.Minute, "agent API: how long a kept-alive connection may wait for its next request")
	fs.IntVar(&cfg.Server.MaxHeaderBytes, "max-header-bytes", 64<<10, "agent API: largest request line and headers in bytes; larger requests get 431")
	debug := fs.Bool("debug", false, "debug logging")
	_ = fs.Parse(os.Args[1:])

	log := logrus.New()
	if *debug {
		log.SetLevel(logrus.DebugLevel)
	}
	cfg.Log = log
	if *cmdline == "" {
		b, err := os.ReadFile(*cmdlineFile)
		if err != nil {
			return fmt.Errorf("read kernel command line: %w", err)
		}
		*cmdline = string(b)
	}
	if agent.IsVirtualMediaBoot(*cmdline) {
		if cfg.VirtualMediaDevice == "" {
			findCtx, cancel := context.WithTimeout(context.Background(), *vmediaTimeout)
			dev, err := agent.FindVirtualMediaDevice(findCtx, agent.DefaultVirtualMediaRoots)
			cancel()
			if err != nil {
				return err
			}
			cfg.VirtualMediaDevice = dev
		}
		merged, err := agent.VirtualMediaCmdline(*cmdline, cfg.VirtualMediaDevice)
		if err != nil {
			return err
		}
		log.WithField("device", cfg.VirtualMediaDevice).Info("Read the deploy parameters from the virtual-media floppy")
		*cmdline = merged
	}
	cfg.Params = agent.ParseCmdline(*cmdline)
	cfg.MACs = macs

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	cfg.Disks = disks
	if len(cfg.Disks) == 0 {
		findCtx, cancel := context.WithTimeout(ctx, time.Minute)
		d, err := agent.FindDisk(findCtx, cfg.Params.Disks)
		cancel()
		if err != nil {
			return err
		}
		cfg.Disks = []string{d}
	}
	if *authTokenFile != "" {
		b, err := os.ReadFile(*authTokenFile)
		if err != nil {
			return fmt.Errorf("read auth token: %w", err)
		}
		cfg.AuthToken = strings.TrimSpace(string(b))
	}
	if *powerOffCmd != "" {
		cfg.PowerOff = func(ctx context.Context) error {
			out, err := exec.CommandContext(ctx, "/bin/sh", "-c", *powerOffCmd).CombinedOutput()
			if err != nil {
				return fmt.Errorf("%s: %w: %s", *powerOffCmd, err, strings.TrimSpace(string(out)))
			}
			return nil
		}
	}
	if *corrupt {
		log.Warn("Fault injection for tests: erase_devices will damage every disk before verifying it")
		cfg.EraseHook = corruptBeforeVerify{}
	}
	m := agent.Mode(*mode)
	if *mode == "auto" {
		m = cfg.Params.Mode()
	}
	a, err := agent.New(cfg)
	if err != nil {
		return err
	}
	switch m {
	case agent.ModeAgent:
		return a.Run(ctx)
	case agent.ModeCallback:
		return a.RunCallback(ctx)
	case "":
		return errors.New("the command line has neither ipa-api-url nor ironic_api_url, deployment_id and iscsi_target_iqn")
	}
	return fmt.Errorf("unknown mode %q", *mode)
}

// corruptEnv turns -test-fault-corrupt-before-verify on.
const corruptEnv = "FERRIC_TEST_FAULT_CORRUPT_BEFORE_VERIFY"

// corruptBeforeVerify writes non-zero bytes into an erased disk before its
// verification, standing in for a disk that did not keep what was written.
type corruptBeforeVerify struct{}

func (corruptBeforeVerify) BeforeVerify(device string) error {
	f, err := os.OpenFile(device, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteAt([]byte(strings.Repeat("\x5a", 4096)), 4096)
	return errors.Join(err, f.Sync(), f.Close())
}
