// Package ribcltest is a fake iLO 4 speaking RIBCL over HTTPS: it checks
// the login, keeps power (changing after a configurable delay, as a real
// server takes time to boot or stop), one-time and persistent boot, the
// pending boot mode and each virtual media device, and checks an image
// URL with HEAD before inserting it, as the iLO fetches images itself.
package ribcltest

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ferricbm/ferric/conductor/bmc/bmctest"
	"github.com/ferricbm/ferric/conductor/bmc/ribcl"
)

// Status codes the fake answers with (docs/ilo.md).
const (
	StatusOK           = 0x0000
	StatusSyntax       = 0x0001
	StatusLoginFailed  = 0x005F
	StatusInvalidVM    = 0x0035
	messageInvalidVM   = "An invalid Virtual Media option has been given."
	messageLoginFailed = "Login failed."
)

// Options configure a fake iLO.
type Options struct {
	Username string
	Password string
	// ProductName defaults to "ProLiant DL360 Gen9".
	ProductName string
	// PowerDelay is how long a power change takes to show.
	PowerDelay time.Duration
	// NoUEFI makes the boot mode commands fail as on servers without UEFI.
	NoUEFI bool
	// UEFI starts the server in UEFI mode, whose persistent boot order
	// lists boot entries (Boot000A) with descriptions instead of device
	// classes.
	UEFI bool
	// OnPower, when set, is told of every power change as it happens: on
	// with the device the server starts from (a reset is a start while
	// on), or off. The lab plays the server's firmware with it. It runs
	// with the fake's lock held, so it must not block or call the fake.
	OnPower func(on bool, device string)
}

type bootEntry struct{ value, description string }

// classes are the devices of legacy mode, which one-time boot takes in
// either mode.
var classes = []string{"CDROM", "FLOPPY", "USB", "HDD", "NETWORK"}

func defaultOrder(mode string) []bootEntry {
	if mode == "UEFI" {
		return []bootEntry{
			{"Boot000A", "HP iLO Virtual USB CD"},
			{"Boot000B", "Embedded RAID 1 : Smart Array P440ar Controller - 279.37 GiB, RAID 0 Logical Drive 1(Target:0, Lun:0)"},
			{"Boot000C", "Embedded LOM 1 Port 1 : HP Ethernet 1Gb 4-port 331i Adapter - NIC (PXE IPv4)"},
		}
	}
	out := make([]bootEntry, len(classes))
	for n, c := range classes {
		out[n] = bootEntry{value: c}
	}
	return out
}

// VM is the state of one virtual media device.
type VM struct {
	Inserted     bool
	URL          string
	BootOption   string
	WriteProtect bool
}

// ILO is the fake's state and its HTTP handler.
type ILO struct {
	bmctest.Gate
	mu         sync.Mutex
	opts       Options
	power      bmctest.Power
	boots      int
	lastBoot   string
	oneTime    string
	persistent []bootEntry
	bootMode   string
	pending    string
	vm         map[string]*VM
	refuseVM   bool
}

// New is a fake iLO, powered off, with no media inserted.
func New(opts Options) *ILO {
	if opts.ProductName == "" {
		opts.ProductName = "ProLiant DL360 Gen9"
	}
	mode := "LEGACY"
	if opts.UEFI {
		mode = "UEFI"
	}
	i := &ILO{
		opts:       opts,
		oneTime:    ribcl.BootNormal,
		persistent: defaultOrder(mode),
		bootMode:   mode,
		pending:    mode,
		vm: map[string]*VM{
			ribcl.DeviceFloppy: {BootOption: "NO_BOOT"},
			ribcl.DeviceCDROM:  {BootOption: "NO_BOOT"},
		},
	}
	i.power = bmctest.Power{Delay: opts.PowerDelay, Started: i.boot, Stopped: func() {
		if i.opts.OnPower != nil {
			i.opts.OnPower(false, "")
		}
	}}
	return i
}

// Server is a fake iLO listening on HTTPS.
type Server struct {
	*bmctest.Server
	*ILO
	// Host and Port are what a client's Config takes.
	Host string
	Port int
}

// Start serves a new fake iLO on addr ("127.0.0.1:0" for any free port).
func Start(addr string, opts Options) (*Server, error) {
	ilo := New(opts)
	srv, err := bmctest.Serve(addr, ilo)
	if err != nil {
		return nil, err
	}
	return &Server{Server: srv, ILO: ilo, Host: srv.Host, Port: srv.Port()}, nil
}

// Power is "ON" or "OFF" as the server is now.
func (i *ILO) Power() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.power.Settle()
	return onOff(i.power.On())
}

// SetPower sets the power state at once, for a test's setup.
func (i *ILO) SetPower(on bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.power.Set(on)
}

// Boots counts the times the server started since the fake was made.
func (i *ILO) Boots() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.power.Settle()
	return i.boots
}

// LastBoot is the device the server last started from (the one-time
// device, else the first of the boot order); "" before its first boot.
func (i *ILO) LastBoot() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.power.Settle()
	return i.lastBoot
}

// OneTimeBoot is the device of the next boot, "Normal" if none.
func (i *ILO) OneTimeBoot() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.power.Settle()
	return i.oneTime
}

// PersistentBoot is the boot order: device classes in legacy mode, boot
// entries in UEFI mode.
func (i *ILO) PersistentBoot() []string {
	i.mu.Lock()
	defer i.mu.Unlock()
	out := make([]string, len(i.persistent))
	for n, e := range i.persistent {
		out[n] = e.value
	}
	return out
}

// BootMode is the mode the server booted in, LEGACY or UEFI.
func (i *ILO) BootMode() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.power.Settle()
	return i.bootMode
}

// VirtualMedia is the state of device (FLOPPY or CDROM).
func (i *ILO) VirtualMedia(device string) VM {
	i.mu.Lock()
	defer i.mu.Unlock()
	if v, ok := i.vm[device]; ok {
		return *v
	}
	return VM{}
}

// RefuseVirtualMedia makes every insert fail as an iLO without a virtual
// media license does.
func (i *ILO) RefuseVirtualMedia(refuse bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.refuseVM = refuse
}

// SetPassword changes the password the fake accepts.
func (i *ILO) SetPassword(p string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.opts.Password = p
}

func onOff(on bool) string {
	if on {
		return "ON"
	}
	return "OFF"
}

// boot starts the server: it uses up the one-time boot device and enters
// the pending boot mode, whose boot order is the mode's own.
func (i *ILO) boot() {
	i.boots++
	i.lastBoot = i.oneTime
	if i.lastBoot == ribcl.BootNormal && len(i.persistent) > 0 {
		i.lastBoot = i.persistent[0].value
	}
	i.oneTime = ribcl.BootNormal
	if i.pending != i.bootMode {
		i.bootMode = i.pending
		i.persistent = defaultOrder(i.bootMode)
	}
	if i.opts.OnPower != nil {
		i.opts.OnPower(true, i.lastBoot)
	}
}

// ServeHTTP answers POST /ribcl.
func (i *ILO) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/ribcl" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	i.Pass(r)
	w.Header().Set("Content-Type", "text/xml")
	_, _ = w.Write(i.answer(body))
}

// answer is what the iLO sends back: a document for the login, then one
// for the command, each with its own status.
func (i *ILO) answer(body []byte) []byte {
	var root ribcl.Element
	if err := xml.Unmarshal(body, &root); err != nil || root.XMLName.Local != "RIBCL" {
		return document(StatusSyntax, "Syntax error: the document is not RIBCL.", "")
	}
	login := root.Child("LOGIN")
	if login == nil {
		return document(StatusSyntax, "Syntax error: LOGIN is missing.", "")
	}
	i.mu.Lock()
	ok := login.Attr("USER_LOGIN") == i.opts.Username && login.Attr("PASSWORD") == i.opts.Password
	i.mu.Unlock()
	if !ok {
		return document(StatusLoginFailed, messageLoginFailed, "")
	}
	var out bytes.Buffer
	out.Write(document(StatusOK, "No error", ""))
	for _, blk := range login.Children {
		for _, cmd := range blk.Children {
			code, msg, data := i.command(blk.XMLName.Local, &cmd)
			out.Write(document(code, msg, data))
			if code != StatusOK {
				return out.Bytes()
			}
		}
	}
	return out.Bytes()
}

func document(code int, msg, data string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "<?xml version=\"1.0\"?>\r\n<RIBCL VERSION=\"2.23\">\r\n<RESPONSE\r\n    STATUS=\"0x%04X\"\r\n    MESSAGE='%s'\r\n     />\r\n", code, esc(msg))
	if data != "" {
		b.WriteString(data + "\r\n")
	}
	b.WriteString("</RIBCL>\r\n")
	return b.Bytes()
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func (i *ILO) command(block string, cmd *ribcl.Element) (int, string, string) {
	name := cmd.XMLName.Local
	switch name {
	case "INSERT_VIRTUAL_MEDIA":
		// Fetching the URL happens without the lock: it may be slow.
		return i.insert(cmd.Attr("DEVICE"), cmd.Attr("IMAGE_URL"))
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.power.Settle()
	switch block + "/" + name {
	case "SERVER_INFO/GET_PRODUCT_NAME":
		return ok(`<GET_PRODUCT_NAME><PRODUCT_NAME VALUE="` + esc(i.opts.ProductName) + `"/></GET_PRODUCT_NAME>`)
	case "SERVER_INFO/GET_HOST_POWER_STATUS":
		return ok(`<GET_HOST_POWER HOST_POWER="` + onOff(i.power.On()) + `"/>`)
	case "SERVER_INFO/SET_HOST_POWER":
		i.power.Schedule(strings.EqualFold(cmd.Attr("HOST_POWER"), "Yes"))
		return ok("")
	case "SERVER_INFO/HOLD_PWR_BTN":
		switch {
		case i.power.On():
			i.power.Schedule(false)
		case !strings.EqualFold(cmd.Attr("TOGGLE"), "NO"):
			i.power.Schedule(true)
		}
		return ok("")
	case "SERVER_INFO/PRESS_PWR_BTN":
		i.power.Schedule(!i.power.On())
		return ok("")
	case "SERVER_INFO/RESET_SERVER":
		if i.power.On() {
			i.boot()
		} else {
			i.power.Schedule(true)
		}
		return ok("")
	case "SERVER_INFO/GET_ONE_TIME_BOOT":
		return ok(`<ONE_TIME_BOOT><BOOT_TYPE VALUE="` + i.oneTime + `"/></ONE_TIME_BOOT>`)
	case "SERVER_INFO/SET_ONE_TIME_BOOT":
		dev := strings.ToUpper(cmd.Attr("VALUE"))
		if !slices.Contains(classes, dev) && dev != "NORMAL" {
			return StatusSyntax, "Syntax error: invalid boot device " + dev + ".", ""
		}
		i.oneTime = dev
		if dev == "NORMAL" {
			i.oneTime = ribcl.BootNormal
		}
		return ok("")
	case "SERVER_INFO/GET_PERSISTENT_BOOT":
		var b strings.Builder
		b.WriteString("<PERSISTENT_BOOT>")
		for _, e := range i.persistent {
			if e.description == "" {
				b.WriteString(`<DEVICE value="` + e.value + `"/>`)
			} else {
				b.WriteString(`<DEVICE value="` + e.value + `" DESCRIPTION="` + esc(e.description) + `"/>`)
			}
		}
		b.WriteString("</PERSISTENT_BOOT>")
		return ok(b.String())
	case "SERVER_INFO/SET_PERSISTENT_BOOT":
		return i.setPersistent(cmd)
	case "SERVER_INFO/GET_PENDING_BOOT_MODE":
		if i.opts.NoUEFI {
			return StatusSyntax, "Syntax error: Line #0: syntax error near \"GET_PENDING_BOOT_MODE\".", ""
		}
		return ok(`<GET_PENDING_BOOT_MODE><BOOT_MODE VALUE="` + i.pending + `"/></GET_PENDING_BOOT_MODE>`)
	case "SERVER_INFO/SET_PENDING_BOOT_MODE":
		mode := strings.ToUpper(cmd.Attr("VALUE"))
		if i.opts.NoUEFI || (mode != "LEGACY" && mode != "UEFI") {
			return StatusSyntax, "Syntax error: Line #0: syntax error near \"SET_PENDING_BOOT_MODE\".", ""
		}
		i.pending = mode
		return ok("")
	case "RIB_INFO/GET_VM_STATUS":
		v, found := i.vm[strings.ToUpper(cmd.Attr("DEVICE"))]
		if !found {
			return StatusInvalidVM, messageInvalidVM, ""
		}
		return ok(fmt.Sprintf(`<GET_VM_STATUS VM_APPLET="DISCONNECTED" DEVICE="%s" BOOT_OPTION="%s" WRITE_PROTECT="%s" IMAGE_INSERTED="%s" IMAGE_URL="%s"/>`,
			strings.ToUpper(cmd.Attr("DEVICE")), v.BootOption, yesNo(v.WriteProtect), yesNo(v.Inserted), esc(v.URL)))
	case "RIB_INFO/SET_VM_STATUS":
		return i.setVMStatus(cmd)
	case "RIB_INFO/EJECT_VIRTUAL_MEDIA":
		v, found := i.vm[strings.ToUpper(cmd.Attr("DEVICE"))]
		if !found || !v.Inserted {
			return StatusInvalidVM, messageInvalidVM, ""
		}
		*v = VM{BootOption: "NO_BOOT"}
		return ok("")
	}
	return StatusSyntax, "Syntax error: Line #0: syntax error near \"" + name + "\" in the line: \"<" + name + "\".", ""
}

func ok(data string) (int, string, string) { return StatusOK, "No error", data }

func yesNo(b bool) string {
	if b {
		return "YES"
	}
	return "NO"
}

func (i *ILO) setPersistent(cmd *ribcl.Element) (int, string, string) {
	var first []bootEntry
	for _, d := range cmd.Children {
		dev := strings.ToUpper(d.Attr("VALUE"))
		n := slices.IndexFunc(i.persistent, func(e bootEntry) bool { return strings.EqualFold(e.value, dev) })
		if d.XMLName.Local != "DEVICE" || n < 0 {
			return StatusSyntax, "Syntax error: invalid boot device " + dev + ".", ""
		}
		first = append(first, i.persistent[n])
	}
	if len(first) == 0 {
		return StatusSyntax, "Syntax error: no DEVICE given.", ""
	}
	rest := slices.DeleteFunc(slices.Clone(i.persistent), func(e bootEntry) bool { return slices.Contains(first, e) })
	i.persistent = append(first, rest...)
	return ok("")
}

func (i *ILO) setVMStatus(cmd *ribcl.Element) (int, string, string) {
	v, found := i.vm[strings.ToUpper(cmd.Attr("DEVICE"))]
	if !found {
		return StatusInvalidVM, messageInvalidVM, ""
	}
	if o := cmd.Child("VM_BOOT_OPTION"); o != nil {
		opt := strings.ToUpper(o.Attr("VALUE"))
		if !slices.Contains([]string{ribcl.VMBootOnce, ribcl.VMBootAlways, ribcl.VMNoBoot, ribcl.VMConnect, ribcl.VMDisconnect}, opt) {
			return StatusInvalidVM, messageInvalidVM, ""
		}
		v.BootOption = opt
	}
	if wp := cmd.Child("VM_WRITE_PROTECT"); wp != nil {
		v.WriteProtect = strings.EqualFold(wp.Attr("VALUE"), "YES")
	}
	return ok("")
}

func (i *ILO) insert(device, url string) (int, string, string) {
	device = strings.ToUpper(device)
	i.mu.Lock()
	_, found := i.vm[device]
	refuse := i.refuseVM
	i.mu.Unlock()
	if !found || refuse || !bmctest.ImageReachable(url) {
		return StatusInvalidVM, messageInvalidVM, ""
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	v := i.vm[device]
	v.Inserted, v.URL = true, url
	return ok("")
}
