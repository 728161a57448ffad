// Package iscsideploy is the "iscsi" deploy interface (Ironic's
// ISCSIDeploy): the deploy ramdisk exports the node's disk as an iSCSI
// target and the conductor, as initiator, lays out the partitions and
// writes the image over the network. The ramdisk calls back either through
// the pass_deploy_info vendor method (the callback-only ramdisk) or by
// heartbeating as an agent, which the conductor then asks to start the
// target. See docs/iscsi-deploy.md.
package iscsideploy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/deploy/image"
	"github.com/ferricbm/ferric/deploy/iscsi"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
)

// Name is the deploy and vendor interface name.
const Name = "iscsi"

// driver_internal_info keys. The deploy key's name marks it secret, so
// every API response masks it.
const (
	deployKeyKey  = "deploy_key_secret"
	usedKeyKey    = "deploy_key_used_secret"
	progressKey   = "deploy_progress"
	rootKey       = "root_uuid_or_disk_id"
	wholeDiskKey  = "is_whole_disk_image"
	instanceKey   = "instance"
	agentURLKey   = "agent_url"
	agentTokenKey = "agent_secret_token"
	// agentVerifyCAKey is the certificate the agent serves its API with.
	agentVerifyCAKey = "agent_verify_ca"
	// bootloaderWaitKey marks a deploy waiting for the callback-only
	// ramdisk's pass_bootloader_install_info.
	bootloaderWaitKey = "waiting_for_bootloader_install"
	// bootloaderProofKey is the hash of the CHAP secret the ramdisk
	// exported the disk with, which its boot loader callback must repeat.
	bootloaderProofKey = "bootloader_callback_secret"
)

// IQNPrefix is the target name prefix; the node UUID follows.
const IQNPrefix = "iqn.2008-10.org.openstack:"

// Options configure the interface.
type Options struct {
	// APIURL is where ramdisks reach the API ([conductor] api_url).
	APIURL                 string
	PortalPort             int
	MaxConcurrentWrites    int
	WriteWorkers           int
	PowerOffAfterFailure   bool
	DefaultBootOption      string
	DefaultEphemeralFormat string
	// CacheDir and CacheMaxBytes configure the image cache, opened on
	// first use.
	CacheDir      string
	CacheMaxBytes int64
	// MaxImageSize bounds the image downloaded, in bytes; 0: the node's
	// properties local_gb, when it gives one.
	MaxImageSize int64
	// FileAllowedPaths are the directories file:// image sources may name
	// (image.CheckLocalPath).
	FileAllowedPaths []string
	// PowerTimeout bounds each power change.
	PowerTimeout time.Duration
	// Initiator tunes the iSCSI sessions.
	Initiator iscsi.Options
	// ConnectAttempts is how often the target is dialled, one second
	// apart, before the deploy fails (Ironic's verify_attempts, 3).
	ConnectAttempts int
	// NotifyPort is where the callback-only ramdisk waits for "done"
	// (10000).
	NotifyPort int
	// ProgressInterval is the least time between two progress records
	// written to the database (default 5s).
	ProgressInterval time.Duration
	// TempDir holds the filesystems made for partition images.
	TempDir string
	// Glance, when set, resolves image sources given as Glance image ids.
	Glance *image.GlanceOptions
	// Client talks to agents.
	Client *http.Client
	// Downloads are the addresses images and config drives may be
	// downloaded from.
	Downloads image.Destinations
	Log       logrus.FieldLogger
	// Clean configures in-band cleaning (clean.go).
	Clean CleanOptions
	// AllowExportWithoutCHAP accepts a ramdisk exporting the disk open to
	// every initiator instead of failing ([iscsi] allow_export_without_chap).
	AllowExportWithoutCHAP bool
	// Meter counts the bytes written to disks; nil counts nothing.
	Meter Meter
}

// OptionsFrom takes the options from a configuration.
func OptionsFrom(cfg config.Config, log logrus.FieldLogger) Options {
	return Options{
		APIURL:                 cfg.Conductor.APIURL,
		PortalPort:             cfg.ISCSI.PortalPort,
		MaxConcurrentWrites:    cfg.ISCSI.MaxConcurrentWrites,
		WriteWorkers:           cfg.ISCSI.WriteWorkers,
		PowerOffAfterFailure:   cfg.Deploy.PowerOffAfterDeployFailure,
		DefaultBootOption:      cfg.Deploy.DefaultBootOption,
		DefaultEphemeralFormat: cfg.PXE.DefaultEphemeralFormat,
		CacheDir:               cfg.PXE.ImagesPath,
		CacheMaxBytes:          cfg.PXE.ImageCacheSize << 20,
		MaxImageSize:           cfg.Deploy.MaxImageSize << 20,
		FileAllowedPaths:       cfg.Conductor.FileURLAllowedPaths,
		Downloads:              image.Destinations{Allowed: cfg.Conductor.DownloadNetworks()},
		PowerTimeout:           cfg.Conductor.PowerStateChangeTimeout,
		Log:                    log,
		Clean:                  cleanOptionsFrom(cfg, log),
		Glance:                 glanceOptionsFrom(cfg.Glance),
		AllowExportWithoutCHAP: cfg.ISCSI.AllowExportWithoutCHAP,
	}
}

// glanceOptionsFrom is nil when no Glance is configured.
func glanceOptionsFrom(g config.Glance) *image.GlanceOptions {
	if g.AuthType == "" {
		return nil
	}
	return &image.GlanceOptions{AuthType: g.AuthType, Endpoint: g.EndpointOverride, AuthURL: g.AuthURL,
		Username: g.Username, Password: g.Password, ProjectName: g.ProjectName, UserDomainName: g.UserDomainName,
		ProjectDomainName: g.ProjectDomainName, Region: g.RegionName}
}

// Glance is the Image service client image ids are resolved with: nil
// without [glance] auth_type, else the client or why it could not be
// made.
func (d *Deploy) Glance() (*image.Glance, error) { return d.glance, d.glanceErr }

// Deploy is the iscsi deploy interface.
type Deploy struct {
	opts  Options
	log   logrus.FieldLogger
	slots *fifo

	cacheOnce sync.Once
	cache     *image.Cache
	cacheErr  error

	// glance is nil without Glance; glanceErr tells why it could not be
	// built.
	glance    *image.Glance
	glanceErr error
	// downloads fetches config drives given as URLs.
	downloads *http.Client

	runs runs
}

// New builds the interface.
func New(opts Options) *Deploy {
	if opts.PortalPort == 0 {
		opts.PortalPort = 3260
	}
	if opts.MaxConcurrentWrites <= 0 {
		opts.MaxConcurrentWrites = 4
	}
	if opts.ConnectAttempts <= 0 {
		opts.ConnectAttempts = 3
	}
	if opts.NotifyPort == 0 {
		opts.NotifyPort = 10000
	}
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = 5 * time.Second
	}
	if opts.DefaultBootOption == "" {
		opts.DefaultBootOption = "local"
	}
	if opts.DefaultEphemeralFormat == "" {
		opts.DefaultEphemeralFormat = "ext4"
	}
	if opts.PowerTimeout <= 0 {
		opts.PowerTimeout = time.Minute
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 10 * time.Minute}
	}
	if opts.Log == nil {
		opts.Log = logging.Discard()
	}
	if opts.Meter == nil {
		opts.Meter = noMeter{}
	}
	if opts.Clean.Iterations == 0 && !opts.Clean.Zeroize {
		opts.Clean.Iterations, opts.Clean.Zeroize = 1, true
	}
	d := &Deploy{opts: opts, log: opts.Log.WithField("deploy_interface", Name), slots: newFIFO(opts.MaxConcurrentWrites),
		downloads: opts.Downloads.Client(10 * time.Minute)}
	if opts.Glance != nil {
		d.glance, d.glanceErr = image.NewGlance(*opts.Glance)
	}
	return d
}

var (
	_ driver.DeployInterface  = (*Deploy)(nil)
	_ driver.HeartbeatHandler = (*Deploy)(nil)
)

func (d *Deploy) imageCache() (*image.Cache, error) {
	d.cacheOnce.Do(func() {
		d.cache, d.cacheErr = image.NewCache(image.CacheOptions{Dir: d.opts.CacheDir, MaxBytes: d.opts.CacheMaxBytes,
			AllowedPaths: d.opts.FileAllowedPaths, Destinations: d.opts.Downloads})
	})
	return d.cache, d.cacheErr
}

// IQN is the target name the ramdisk exports the node's disk as.
func IQN(nodeUUID string) string { return IQNPrefix + nodeUUID }

// Validate checks the boot interface, the API URL the ramdisk needs and
// instance_info.
func (d *Deploy) Validate(ctx context.Context, t driver.TaskContext) error {
	drv, err := t.Driver()
	if err != nil {
		return err
	}
	if err := drv.Boot.Validate(ctx, t); err != nil {
		return err
	}
	if d.opts.APIURL == "" {
		return errs.InvalidParameterValue("Couldn't get the URL of the Ironic API service from the configuration file or keystone catalog.")
	}
	_, err = d.instanceInfo(ctx, t.Node())
	return err
}

// Prepare boots into the instance for a node taken over while active;
// otherwise it issues a new deploy key, valid for the coming wait state
// only, and prepares the deploy ramdisk.
func (d *Deploy) Prepare(ctx context.Context, t driver.TaskContext) error {
	drv, err := t.Driver()
	if err != nil {
		return err
	}
	n := t.Node()
	if n.State() == states.Active {
		return drv.Boot.PrepareInstance(ctx, t)
	}
	info, err := d.instanceInfo(ctx, n)
	if err != nil {
		return err
	}
	key, err := issueDeployKey(n)
	if err != nil {
		return err
	}
	n.DriverInternalInfo[wholeDiskKey] = info.wholeDisk
	delete(n.DriverInternalInfo, progressKey)
	delete(n.DriverInternalInfo, rootKey)
	bootOption := info.bootOption
	if info.wholeDisk {
		// The callback ramdisk installs a boot loader when it sees local.
		bootOption = "netboot"
	}
	if err := drv.Boot.PrepareRamdisk(ctx, t, d.ramdiskParams(n, key, bootOption, info.bootMode)); err != nil {
		// No ramdisk will call back with a key issued for a boot that
		// was never set up.
		delete(n.DriverInternalInfo, deployKeyKey)
		return err
	}
	return nil
}

// ramdiskParams are the deploy ramdisk's kernel parameters: the agent's
// and the callback-only ramdisk's, so that either kind calls back.
func (d *Deploy) ramdiskParams(n *model.Node, key, bootOption, bootMode string) map[string]any {
	params := map[string]any{
		"deployment_id":      n.UUID,
		"deployment_key":     key,
		"iscsi_target_iqn":   IQN(n.UUID),
		"ironic_api_url":     strings.TrimRight(d.opts.APIURL, "/"),
		"ipa-api-url":        strings.TrimRight(d.opts.APIURL, "/"),
		"ipa-driver-name":    n.Driver,
		"disk":               "cciss/c0d0,sda,hda,vda",
		"boot_option":        bootOption,
		"boot_mode":          bootMode,
		"coreos.configdrive": 0,
	}
	if hints := rootDeviceHints(n.Properties["root_device"]); hints != "" {
		params["root_device"] = hints
	}
	return params
}

// rootDeviceHints renders properties.root_device as key=value pairs with
// percent-encoded values.
func rootDeviceHints(v any) string {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return ""
	}
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+url.QueryEscape(fmt.Sprint(m[k])))
	}
	return strings.Join(parts, ",")
}

// Deploy caches the image (one download however many nodes want it),
// checks it fits, and boots the node into the deploy ramdisk.
func (d *Deploy) Deploy(ctx context.Context, t driver.TaskContext) (driver.Result, error) {
	drv, err := t.Driver()
	if err != nil {
		return 0, err
	}
	n := t.Node()
	info, err := d.instanceInfo(ctx, n)
	if err != nil {
		return 0, err
	}
	err = d.startDeploy(ctx, t, drv, info)
	if err != nil {
		// The conductor only records the failure: what Prepare set up
		// for the ramdisk goes here.
		d.releaseImage(n.UUID)
		delete(n.DriverInternalInfo, deployKeyKey)
		if cerr := errors.Join(drv.Boot.CleanUpRamdisk(ctx, t), drv.Boot.CleanUpInstance(ctx, t)); cerr != nil {
			logging.FromContext(ctx, d.log).WithField("node", n.UUID).WithError(cerr).Error("Could not remove the boot files of a failed deploy")
		}
		return 0, err
	}
	return driver.Wait, nil
}

func (d *Deploy) startDeploy(ctx context.Context, t driver.TaskContext, drv *driver.Driver, info *instanceInfo) error {
	if _, err := d.cacheImage(ctx, t.Node(), info); err != nil {
		return err
	}
	// The boot interface's PrepareRamdisk chose what the node boots
	// next (PXE, or the virtual CD).
	return d.reboot(ctx, t, drv)
}

// cacheImage acquires the node's image from the cache and checks that a
// partition image fits its root partition. The reference is released by
// the end of the deploy, its failure or CleanUp.
func (d *Deploy) cacheImage(ctx context.Context, n *model.Node, info *instanceInfo) (image.Entry, error) {
	nodeUUID := n.UUID
	cache, err := d.imageCache()
	if err != nil {
		return image.Entry{}, fmt.Errorf("image cache: %w", err)
	}
	src := image.Source{URL: info.imageSource, Checksum: info.checksum, HashAlgo: info.hashAlgo, HashValue: info.hashValue}
	if info.glance != nil {
		src = d.glance.Source(*info.glance)
	}
	src.MaxSize = d.maxImageSize(n)
	entry, err := cache.Acquire(ctx, nodeUUID, src)
	if err != nil {
		return image.Entry{}, fmt.Errorf("cache image %s: %w", redact(info.imageSource), err)
	}
	if !info.wholeDisk {
		img, err := image.Open(entry.Path)
		if err != nil {
			cache.Release(nodeUUID)
			return image.Entry{}, fmt.Errorf("open image %s: %w", redact(info.imageSource), err)
		}
		sizeMB := (img.VirtualSize() + 1<<20 - 1) >> 20
		img.Close()
		if sizeMB > info.rootMB {
			cache.Release(nodeUUID)
			return image.Entry{}, fmt.Errorf("Root partition is too small for requested image. Image virtual size: %d MB, Root size: %d MB", sizeMB, info.rootMB)
		}
	}
	return entry, nil
}

// maxImageSize is the configured limit, else the node's disk: an image
// larger than local_gb could not be written to it anyway.
func (d *Deploy) maxImageSize(n *model.Node) int64 {
	if d.opts.MaxImageSize > 0 {
		return d.opts.MaxImageSize
	}
	if gb, err := intParam(n.Properties["local_gb"]); err == nil && gb > 0 {
		return gb << 30
	}
	return 0
}

// ContinueDeploy has nothing to resume: an iSCSI deploy continues when the
// ramdisk calls back, so the node goes on waiting for it.
func (d *Deploy) ContinueDeploy(context.Context, driver.TaskContext) (driver.Result, error) {
	return driver.Wait, nil
}

// TearDown powers the node off.
func (d *Deploy) TearDown(ctx context.Context, t driver.TaskContext) (driver.Result, error) {
	drv, err := t.Driver()
	if err != nil {
		return 0, err
	}
	if err := d.setPower(ctx, t, drv, states.PowerOff); err != nil {
		return 0, err
	}
	return driver.Done, nil
}

// CleanUp drops the node's image reference, boot files and deploy key.
func (d *Deploy) CleanUp(ctx context.Context, t driver.TaskContext) error {
	drv, err := t.Driver()
	if err != nil {
		return err
	}
	n := t.Node()
	d.releaseImage(n.UUID)
	delete(n.DriverInternalInfo, deployKeyKey)
	return errors.Join(drv.Boot.CleanUpRamdisk(ctx, t), drv.Boot.CleanUpInstance(ctx, t))
}

func (d *Deploy) releaseImage(nodeUUID string) {
	if cache, err := d.imageCache(); err == nil {
		cache.Release(nodeUUID)
	}
}

// TakeOver needs nothing beyond Prepare, which rebuilt the boot files.
func (d *Deploy) TakeOver(context.Context, driver.TaskContext) error { return nil }

// reboot powers the node on, or cycles it when it is on already.
func (d *Deploy) reboot(ctx context.Context, t driver.TaskContext, drv *driver.Driver) error {
	current, err := drv.Power.GetPowerState(ctx, t)
	if err != nil {
		return fmt.Errorf("get power state: %w", err)
	}
	if current == states.PowerOn {
		if err := drv.Power.Reboot(ctx, t, false, d.opts.PowerTimeout); err != nil {
			return fmt.Errorf("reboot: %w", err)
		}
		t.Node().PowerState = ptr(states.PowerOn)
		return nil
	}
	return d.setPower(ctx, t, drv, states.PowerOn)
}

func (d *Deploy) setPower(ctx context.Context, t driver.TaskContext, drv *driver.Driver, state string) error {
	if err := drv.Power.SetPowerState(ctx, t, state, d.opts.PowerTimeout); err != nil {
		return fmt.Errorf("%s: %w", state, err)
	}
	n := t.Node()
	n.PowerState, n.TargetPowerState = ptr(state), nil
	return nil
}

// redact drops user info and query from a URL for messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable URL>"
	}
	u.User, u.RawQuery = nil, ""
	return u.String()
}

func portal(address string, port int) string {
	return net.JoinHostPort(address, fmt.Sprint(port))
}
