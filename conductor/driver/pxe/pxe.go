// Package pxe is the "pxe" boot interface: it makes a node network-boot the
// deploy ramdisk, then the deployed instance, by writing per-node PXELINUX
// configurations (pxelinux.cfg/01-<mac>) under the TFTP root and, with
// iPXE, scripts under the HTTP root, next to the kernels and ramdisks they
// load. It also runs the conductor's boot file server for the HTTP root.
package pxe

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/driver/driverinfo"
	"github.com/ferricbm/ferric/conductor/vmedia/publish"
	"github.com/ferricbm/ferric/deploy/image"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/httpserver"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/tlsfiles"
)

// Name is the interface's name.
const Name = "pxe"

// Boot devices set through the management interface.
const (
	devicePXE  = "pxe"
	deviceDisk = "disk"
)

// Options configure the interface.
type Options struct {
	// TFTPRoot receives PXELINUX configurations and boot files.
	TFTPRoot string
	// HTTPRoot receives iPXE scripts and boot files when IPXE is set, and
	// is what the boot file server serves.
	HTTPRoot string
	// HTTPURL is the boot file server's base URL; its host:port is where
	// the server listens. Empty: no server.
	HTTPURL string
	IPXE    bool
	// AppendParams go on every kernel command line written.
	AppendParams string
	// DefaultBootOption applies when instance_info capabilities name none.
	DefaultBootOption string
	// Client fetches http(s) kernels and ramdisks; nil: Downloads' client
	// with a 10-minute overall timeout.
	Client *http.Client
	// Downloads are the addresses kernels and ramdisks may be downloaded
	// from.
	Downloads image.Destinations
	// FileAllowedPaths are the directories kernels and ramdisks given as
	// local paths may come from (image.CheckLocalPath).
	FileAllowedPaths []string
	// MaxFileSize bounds each kernel and ramdisk fetched, in bytes; 0 is no
	// limit.
	MaxFileSize int64
	// Server bounds the boot file server's connections.
	Server httpserver.Limits
	// CertFile and KeyFile are the server's key pair when HTTPURL is
	// https://, read again whenever they change.
	CertFile, KeyFile string
	// Media publishes virtual media in <HTTPRoot>/vmedia: the server hands
	// that path to it (signed, expiring URLs) and runs its reaper. Without
	// it the path is refused, so the folder is never served unsigned.
	Media *publish.WebServer
	// ReapInterval is how often expired media are removed; default a
	// minute.
	ReapInterval time.Duration
	Log          logrus.FieldLogger
}

// OptionsFrom takes the options from a configuration.
func OptionsFrom(cfg config.Config, log logrus.FieldLogger) Options {
	return Options{
		TFTPRoot:          cfg.PXE.TFTPRoot,
		HTTPRoot:          cfg.Deploy.HTTPRoot,
		HTTPURL:           cfg.Deploy.HTTPURL,
		IPXE:              cfg.PXE.IPXEEnabled,
		AppendParams:      cfg.PXE.PXEAppendParams,
		DefaultBootOption: cfg.Deploy.DefaultBootOption,
		FileAllowedPaths:  cfg.Conductor.FileURLAllowedPaths,
		Downloads:         image.Destinations{Allowed: cfg.Conductor.DownloadNetworks()},
		MaxFileSize:       cfg.PXE.MaxBootFileSize << 20,
		Server: httpserver.Limits{ReadTimeout: cfg.Deploy.HTTPReadTimeout, WriteTimeout: cfg.Deploy.HTTPWriteTimeout,
			PerWrite: true, IdleTimeout: cfg.Deploy.HTTPIdleTimeout, MaxHeaderBytes: cfg.Deploy.HTTPMaxHeaderSize},
		CertFile: cfg.Deploy.HTTPCertFile,
		KeyFile:  cfg.Deploy.HTTPKeyFile,
		Log:      log,
	}
}

// Boot is the pxe boot interface.
type Boot struct {
	opts Options
	log  logrus.FieldLogger

	mu         sync.Mutex
	srv        *http.Server
	stopReaper context.CancelFunc
}

// New builds the interface.
func New(opts Options) *Boot {
	if opts.Client == nil {
		opts.Client = opts.Downloads.Client(10 * time.Minute)
	}
	if opts.Log == nil {
		opts.Log = logging.Discard()
	}
	if opts.DefaultBootOption == "" {
		opts.DefaultBootOption = "local"
	}
	if opts.ReapInterval <= 0 {
		opts.ReapInterval = time.Minute
	}
	return &Boot{opts: opts, log: opts.Log.WithField("boot_interface", Name)}
}

var (
	_ driver.BootInterface     = (*Boot)(nil)
	_ driver.Service           = (*Boot)(nil)
	_ driver.PropertyDescriber = (*Boot)(nil)
)

// Properties describes the driver_info keys the interface reads.
func (b *Boot) Properties() map[string]string {
	return map[string]string{
		"deploy_kernel":  "Deploy ramdisk kernel: an http:// or https:// URL, or an absolute path or file:// URL under [conductor] file_url_allowed_paths. Required.",
		"deploy_ramdisk": "Deploy ramdisk initrd: an http:// or https:// URL, or an absolute path or file:// URL under [conductor] file_url_allowed_paths. Required.",
	}
}

// Validate checks the deploy ramdisk images, the ports to boot from and,
// for a netbooted partition image, the instance kernel and ramdisk.
func (b *Boot) Validate(ctx context.Context, t driver.TaskContext) error {
	n := t.Node()
	if missing := missingKeys(n.DriverInfo, "deploy_kernel", "deploy_ramdisk"); len(missing) > 0 {
		return errs.New(errs.KindMissingParameterValue,
			"Cannot validate PXE bootloader. Some parameters were missing in node's driver_info. Missing are: %s", driverinfo.PyList(missing))
	}
	for _, k := range []string{"deploy_kernel", "deploy_ramdisk"} {
		if err := b.checkRef(n.DriverInfo[k]); err != nil {
			return errs.InvalidParameterValue("Node %s: driver_info %s: %s", n.UUID, k, err)
		}
	}
	macs, err := bootMACs(ctx, t)
	if err != nil {
		return err
	}
	if len(macs) == 0 {
		return errs.New(errs.KindMissingParameterValue, "Node %s does not have any port associated with it.", n.UUID)
	}
	if b.opts.IPXE && b.opts.HTTPURL == "" {
		return errs.InvalidParameterValue("iPXE boot is enabled but no [deploy] http_url is set.")
	}
	if _, ok := n.InstanceInfo["image_source"]; ok && !WholeDisk(n) && b.bootOption(n) == "netboot" {
		if missing := missingKeys(n.InstanceInfo, "kernel", "ramdisk"); len(missing) > 0 {
			return errs.New(errs.KindMissingParameterValue,
				"Cannot validate PXE bootloader. Some parameters were missing in node's instance_info. Missing are: %s", driverinfo.PyList(missing))
		}
		for _, k := range []string{"kernel", "ramdisk"} {
			if err := b.checkRef(n.InstanceInfo[k]); err != nil {
				return errs.InvalidParameterValue("Node %s: instance_info %s: %s", n.UUID, k, err)
			}
		}
	}
	return nil
}

// PrepareRamdisk writes the node's deploy boot configuration, booting the
// deploy kernel and ramdisk with params on the kernel command line, and
// makes the node's next boot a network boot. The boot device is the boot
// interface's choice: a virtual-media boot interface sets the CD instead.
func (b *Boot) PrepareRamdisk(ctx context.Context, t driver.TaskContext, params map[string]any) error {
	n := t.Node()
	cmdline, err := kernelParams(params)
	if err != nil {
		return err
	}
	err = b.writeConfigs(ctx, t, bootFiles{
		label: "deploy", kernel: "deploy_kernel", ramdisk: "deploy_ramdisk",
		kernelRef: n.DriverInfo["deploy_kernel"], ramdiskRef: n.DriverInfo["deploy_ramdisk"],
		cmdline: joinNonEmpty(cmdline, b.opts.AppendParams),
	})
	if err != nil {
		return err
	}
	d, err := t.Driver()
	if err != nil {
		return err
	}
	if err := d.Management.SetBootDevice(ctx, t, devicePXE, false); err != nil {
		// Nothing may stay published for a node that will not boot it.
		return errors.Join(fmt.Errorf("set boot device to pxe: %w", err), b.remove(n.UUID))
	}
	return nil
}

// CleanUpRamdisk removes the node's boot configuration and deploy images.
func (b *Boot) CleanUpRamdisk(ctx context.Context, t driver.TaskContext) error {
	return b.remove(t.Node().UUID, "config", "deploy_kernel", "deploy_ramdisk")
}

// PrepareInstance makes the node boot what was deployed: a netbooted
// partition image through its own kernel and ramdisk with root=UUID=...;
// anything else from its disk, with the PXE configuration gone so a
// stale one cannot catch the node.
func (b *Boot) PrepareInstance(ctx context.Context, t driver.TaskContext) error {
	n := t.Node()
	d, err := t.Driver()
	if err != nil {
		return err
	}
	if WholeDisk(n) || b.bootOption(n) == "local" {
		if err := b.remove(n.UUID); err != nil {
			return err
		}
		if err := d.Management.SetBootDevice(ctx, t, deviceDisk, true); err != nil {
			return fmt.Errorf("set boot device to disk: %w", err)
		}
		return nil
	}
	root, _ := n.DriverInternalInfo["root_uuid_or_disk_id"].(string)
	if root == "" {
		return fmt.Errorf("node %s: no root partition UUID recorded to boot the instance from", n.UUID)
	}
	err = b.writeConfigs(ctx, t, bootFiles{
		label: "boot_partition", kernel: "kernel", ramdisk: "ramdisk",
		kernelRef: n.InstanceInfo["kernel"], ramdiskRef: n.InstanceInfo["ramdisk"],
		cmdline: joinNonEmpty("root=UUID="+root+" ro text", b.opts.AppendParams),
	})
	if err != nil {
		return err
	}
	if err := b.remove(n.UUID, "deploy_kernel", "deploy_ramdisk"); err != nil {
		return err
	}
	if err := d.Management.SetBootDevice(ctx, t, devicePXE, true); err != nil {
		return fmt.Errorf("set boot device to pxe: %w", err)
	}
	return nil
}

// CleanUpInstance removes everything written for the node.
func (b *Boot) CleanUpInstance(ctx context.Context, t driver.TaskContext) error {
	return b.remove(t.Node().UUID)
}

// WholeDisk reports driver_internal_info.is_whole_disk_image, falling
// back to Ironic's rule for images without Glance metadata: no
// instance_info kernel and ramdisk means a whole-disk image.
func WholeDisk(n *model.Node) bool {
	if v, ok := n.DriverInternalInfo["is_whole_disk_image"].(bool); ok {
		return v
	}
	_, kernel := n.InstanceInfo["kernel"]
	_, ramdisk := n.InstanceInfo["ramdisk"]
	return !kernel && !ramdisk
}

// BootOption is capabilities boot_option of instance_info, else the
// default; whole-disk images always boot locally.
func (b *Boot) bootOption(n *model.Node) string {
	return BootOption(n, b.opts.DefaultBootOption)
}

// BootOption reads instance_info capabilities boot_option, falling back to
// def.
func BootOption(n *model.Node, def string) string {
	if v := Capability(n.InstanceInfo["capabilities"], "boot_option"); v != "" {
		return v
	}
	return def
}

// Capability reads one capability from a dict, a JSON object string or a
// "k1:v1,k2:v2" string.
func Capability(caps any, key string) string {
	switch c := caps.(type) {
	case map[string]any:
		s, _ := c[key].(string)
		return s
	case string:
		if strings.HasPrefix(strings.TrimSpace(c), "{") {
			var m map[string]any
			if json.Unmarshal([]byte(c), &m) != nil {
				return ""
			}
			return Capability(m, key)
		}
		for _, kv := range strings.Split(c, ",") {
			if k, v, ok := strings.Cut(kv, ":"); ok && strings.TrimSpace(k) == key {
				return strings.TrimSpace(v)
			}
		}
	}
	return ""
}

type bootFiles struct {
	label                 string
	kernel, ramdisk       string
	kernelRef, ramdiskRef any
	cmdline               string
}

// writeConfigs fetches the kernel and ramdisk into the node's directory of
// each boot root and points every boot MAC at the node's configuration.
func (b *Boot) writeConfigs(ctx context.Context, t driver.TaskContext, f bootFiles) error {
	n := t.Node()
	macs, err := bootMACs(ctx, t)
	if err != nil {
		return err
	}
	if len(macs) == 0 {
		return fmt.Errorf("node %s has no port to boot from", n.UUID)
	}
	roots := []string{b.opts.TFTPRoot}
	if b.opts.IPXE {
		roots = append(roots, b.opts.HTTPRoot)
	}
	for _, root := range roots {
		dir := filepath.Join(root, n.UUID)
		if err := os.MkdirAll(dir, dirMode); err != nil {
			return fmt.Errorf("pxe: %w", err)
		}
		for _, img := range []struct {
			name string
			ref  any
		}{{f.kernel, f.kernelRef}, {f.ramdisk, f.ramdiskRef}} {
			if err := b.Fetch(ctx, img.ref, filepath.Join(dir, img.name)); err != nil {
				return fmt.Errorf("pxe: fetch %s of node %s: %w", img.name, n.UUID, err)
			}
		}
	}
	pxelinux := fmt.Sprintf("default %s\n\nlabel %s\nkernel %s/%s\nappend initrd=%s/%s %s\nipappend 3\n",
		f.label, f.label, n.UUID, f.kernel, n.UUID, f.ramdisk, f.cmdline)
	if err := b.install(b.opts.TFTPRoot, n.UUID, pxelinux, macs, pxelinuxName); err != nil {
		return err
	}
	if b.opts.IPXE {
		base := strings.TrimRight(b.opts.HTTPURL, "/") + "/" + n.UUID
		ipxe := fmt.Sprintf("#!ipxe\n\n:%s\nkernel %s/%s %s initrd=%s BOOTIF=${mac}\ninitrd %s/%s\nboot\n",
			f.label, base, f.kernel, f.cmdline, f.ramdisk, base, f.ramdisk)
		if err := b.install(b.opts.HTTPRoot, n.UUID, ipxe, macs, ipxeName); err != nil {
			return err
		}
		// The script DHCP hands to iPXE: it chains to the node's own.
		chain := fmt.Sprintf("#!ipxe\n\nchain --autofree %s/pxelinux.cfg/${mac} || goto no_config\n\n"+
			":no_config\necho No boot configuration for ${mac}; rebooting in 60 seconds.\nsleep 60\nreboot\n",
			strings.TrimRight(b.opts.HTTPURL, "/"))
		if err := writeFileAtomic(filepath.Join(b.opts.HTTPRoot, "boot.ipxe"), []byte(chain)); err != nil {
			return fmt.Errorf("pxe: write boot.ipxe: %w", err)
		}
	}
	return nil
}

// pxelinuxName is PXELINUX's per-MAC file name: ARP type 1, dashes.
func pxelinuxName(mac string) string { return "01-" + strings.ReplaceAll(mac, ":", "-") }

// ipxeName is the name an iPXE chain script looks up: the MAC as ${mac}
// expands, lower case with colons.
func ipxeName(mac string) string { return mac }

// install writes <root>/<uuid>/config atomically and links
// <root>/pxelinux.cfg/<name(mac)> to it for every MAC.
func (b *Boot) install(root, uuid, content string, macs []string, name func(string) string) error {
	cfg := filepath.Join(root, uuid, "config")
	if err := writeFileAtomic(cfg, []byte(content)); err != nil {
		return fmt.Errorf("pxe: write %s: %w", cfg, err)
	}
	links := filepath.Join(root, "pxelinux.cfg")
	if err := os.MkdirAll(links, dirMode); err != nil {
		return fmt.Errorf("pxe: %w", err)
	}
	for _, mac := range macs {
		link := filepath.Join(links, name(mac))
		if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("pxe: %w", err)
		}
		if err := os.Symlink(filepath.Join("..", uuid, "config"), link); err != nil {
			return fmt.Errorf("pxe: %w", err)
		}
	}
	return nil
}

// remove deletes the named files of the node's directories (all of them
// when none is named, with the directories) and, with the configuration,
// every MAC link that points to it. Links are found by target, not by the
// node's current ports: a port deleted since must not leave a link behind.
func (b *Boot) remove(uuid string, names ...string) error {
	var problems []error
	withConfig := len(names) == 0 || slices.Contains(names, "config")
	for _, root := range []string{b.opts.TFTPRoot, b.opts.HTTPRoot} {
		if root == "" {
			continue
		}
		links := filepath.Join(root, "pxelinux.cfg")
		var entries []os.DirEntry
		if withConfig {
			var err error
			entries, err = os.ReadDir(links)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				problems = append(problems, err)
			}
		}
		for _, e := range entries {
			target, err := os.Readlink(filepath.Join(links, e.Name()))
			if err == nil && target == filepath.Join("..", uuid, "config") {
				if err := os.Remove(filepath.Join(links, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
					problems = append(problems, err)
				}
			}
		}
		dir := filepath.Join(root, uuid)
		if len(names) == 0 {
			if err := os.RemoveAll(dir); err != nil {
				problems = append(problems, err)
			}
			continue
		}
		for _, name := range names {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				problems = append(problems, err)
			}
		}
	}
	if err := errors.Join(problems...); err != nil {
		return fmt.Errorf("pxe: clean up node %s: %w", uuid, err)
	}
	return nil
}

// bootMACs are the lower-case MACs of the node's PXE-enabled ports.
func bootMACs(ctx context.Context, t driver.TaskContext) ([]string, error) {
	ports, err := t.Ports(ctx)
	if err != nil {
		return nil, err
	}
	var macs []string
	for _, p := range ports {
		if p.PXEEnabled && p.Address != "" {
			macs = append(macs, strings.ToLower(p.Address))
		}
	}
	sort.Strings(macs)
	return macs, nil
}

// kernelParams renders params as sorted key=value words. A value with
// white space would split into words the ramdisk misreads.
func kernelParams(params map[string]any) (string, error) {
	keys := slices.Sorted(maps.Keys(params))
	words := make([]string, 0, len(keys))
	for _, k := range keys {
		v := fmt.Sprint(params[k])
		if strings.ContainsAny(k+v, " \t\n") {
			return "", fmt.Errorf("pxe: kernel parameter %s: white space is not allowed", k)
		}
		words = append(words, k+"="+v)
	}
	return strings.Join(words, " "), nil
}

func joinNonEmpty(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}

func missingKeys(m map[string]any, keys ...string) []string {
	var missing []string
	for _, k := range keys {
		if s, ok := m[k].(string); !ok || s == "" {
			missing = append(missing, k)
		}
	}
	return missing
}

// checkRef accepts an http(s) URL, or an absolute path or file URL under
// the allowed directories.
func (b *Boot) checkRef(ref any) error {
	s, _ := ref.(string)
	if path, ok := image.LocalPath(s); ok {
		if !filepath.IsAbs(path) {
			return fmt.Errorf("file URL %q has no absolute path", s)
		}
		_, err := image.CheckLocalPath(path, b.opts.FileAllowedPaths)
		return err
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a URL", s)
	}
	switch u.Scheme {
	case "http", "https":
		if u.Host == "" {
			return fmt.Errorf("URL %q has no host", s)
		}
		return b.opts.Downloads.CheckURL(s)
	default:
		return fmt.Errorf("%q is neither an http or https URL nor an absolute path or file URL", s)
	}
}

// Fetch copies (a path or file URL) or downloads (http/https) ref to dst,
// at most MaxFileSize bytes of it.
func (b *Boot) Fetch(ctx context.Context, ref any, dst string) error {
	if err := b.checkRef(ref); err != nil {
		return err
	}
	s := ref.(string)
	if path, ok := image.LocalPath(s); ok {
		src, err := image.OpenLocal(path, b.opts.FileAllowedPaths)
		if err != nil {
			return err
		}
		defer src.Close()
		return writeStreamAtomic(dst, &image.LimitedReader{R: src, Max: b.opts.MaxFileSize})
	}
	u, _ := url.Parse(s)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s, nil)
	if err != nil {
		return err
	}
	resp, err := b.opts.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	where := u.Scheme + "://" + u.Host + u.Path
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", where, resp.Status)
	}
	if max := b.opts.MaxFileSize; max > 0 && resp.ContentLength > max {
		return fmt.Errorf("GET %s: %w: it has %d bytes, more than the %d allowed ([pxe] max_boot_file_size)", where, image.ErrTooLarge, resp.ContentLength, max)
	}
	if err := writeStreamAtomic(dst, &image.LimitedReader{R: resp.Body, Max: b.opts.MaxFileSize}); err != nil {
		return fmt.Errorf("GET %s: %w", where, err)
	}
	return nil
}

// StartService serves the HTTP root at the host:port of the HTTP URL.
func (b *Boot) StartService(ctx context.Context) error {
	if b.opts.HTTPURL == "" {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv != nil {
		return nil
	}
	u, err := url.Parse(b.opts.HTTPURL)
	if err != nil {
		return fmt.Errorf("pxe: [deploy] http_url: %w", err)
	}
	addr := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		addr = net.JoinHostPort(u.Hostname(), port)
	}
	// The URLs handed out (iPXE scripts, virtual media) start with
	// http_url, so its scheme decides what the server speaks.
	var tlsConfig *tls.Config
	if u.Scheme == "https" {
		cert, err := tlsfiles.NewServerCert(b.opts.CertFile, b.opts.KeyFile, b.log)
		if err != nil {
			return fmt.Errorf("pxe: boot file server [deploy] http_cert_file, http_key_file: %w", err)
		}
		tlsConfig = cert.Config()
	}
	if err := os.MkdirAll(b.opts.HTTPRoot, dirMode); err != nil {
		return fmt.Errorf("pxe: %w", err)
	}
	l, err := new(net.ListenConfig).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("pxe: boot file server: %w", err)
	}
	prefix := strings.TrimRight(u.Path, "/")
	h := http.FileServer(filesOnly{http.Dir(b.opts.HTTPRoot)})
	if b.opts.Media != nil {
		h = b.opts.Media.Wrap(h)
		reapCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		b.stopReaper = cancel
		go b.opts.Media.RunReaper(reapCtx, b.opts.ReapInterval, func(err error) {
			b.log.WithError(err).Warn("Removing expired virtual media failed")
		})
	} else {
		h = refuseMedia(h)
	}
	if prefix != "" {
		h = http.StripPrefix(prefix, h)
	}
	b.srv = httpserver.New(h, b.opts.Server)
	b.srv.TLSConfig = tlsConfig
	srv := b.srv
	go func() {
		if err := httpserver.Serve(srv, l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			b.log.WithError(err).Error("Boot file server stopped")
		}
	}()
	b.log.Infof("Serving %s at %s", b.opts.HTTPRoot, b.opts.HTTPURL)
	return nil
}

// StopService shuts the boot file server down.
func (b *Boot) StopService(ctx context.Context) error {
	b.mu.Lock()
	srv := b.srv
	b.srv = nil
	if b.stopReaper != nil {
		b.stopReaper()
		b.stopReaper = nil
	}
	b.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Shutdown(ctx)
}

// refuseMedia answers 404 for the virtual media folder when no publisher
// guards it.
func refuseMedia(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := path.Clean("/" + r.URL.Path)
		if p+"/" == publish.Prefix || strings.HasPrefix(p, publish.Prefix) {
			http.NotFound(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
