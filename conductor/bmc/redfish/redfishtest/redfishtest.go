// Package redfishtest is a fake Redfish BMC over HTTPS: one system with
// power (changing after a configurable delay) and a boot source override
// that a boot uses up when it is "Once", one manager with a floppy and a
// CD virtual media device, Basic and session authentication, and task
// monitors for inserts when asked to answer them asynchronously. An insert
// checks the image URL with HEAD first, as the BMC fetches it itself.
package redfishtest

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferricbm/ferric/conductor/bmc/bmctest"
	"github.com/ferricbm/ferric/conductor/bmc/redfish"
)

const (
	systemPath  = "/redfish/v1/Systems/1"
	managerPath = "/redfish/v1/Managers/1"
	mediaPath   = managerPath + "/VirtualMedia/"
	sessions    = "/redfish/v1/SessionService/Sessions"
	monitors    = "/redfish/v1/TaskService/TaskMonitors/"
)

// Options configure a fake BMC.
type Options struct {
	Username string
	Password string
	// Model defaults to "ProLiant DL360 Gen10".
	Model string
	// PowerDelay is how long a power change takes to show.
	PowerDelay time.Duration
	// AsyncMedia answers inserts with 202 and a task monitor, the task
	// finishing after TaskDelay.
	AsyncMedia bool
	TaskDelay  time.Duration
	// OnPower, when set, is told of every power change as it happens: on
	// with the boot source the system starts from (a restart is a start
	// while on), or off. It runs with the fake's lock held, so it must
	// not block or call the fake.
	OnPower func(on bool, source string)
}

// Media is the state of one virtual media device.
type Media struct {
	Types          []string
	Inserted       bool
	Image          string
	WriteProtected bool
}

type taskState struct {
	done    time.Time
	state   string
	message string
}

// BMC is the fake's state and its HTTP handler.
type BMC struct {
	bmctest.Gate
	mu       sync.Mutex
	opts     Options
	power    bmctest.Power
	boots    int
	lastBoot string
	boot     redfish.Boot
	media    map[string]*Media
	refuseVM bool
	failTask string
	tokens   map[string]string
	tasks    map[string]*taskState
	nextID   int
}

// New is a fake BMC, powered off, with empty media devices.
func New(opts Options) *BMC {
	if opts.Model == "" {
		opts.Model = "ProLiant DL360 Gen10"
	}
	b := &BMC{
		opts: opts,
		boot: redfish.Boot{Target: redfish.BootNone, Enabled: redfish.BootDisabled},
		media: map[string]*Media{
			"1": {Types: []string{redfish.MediaFloppy, redfish.MediaUSBStick}},
			"2": {Types: []string{redfish.MediaCD, redfish.MediaDVD}},
		},
		tokens: map[string]string{},
		tasks:  map[string]*taskState{},
	}
	b.power = bmctest.Power{Delay: opts.PowerDelay, Started: b.start, Stopped: func() {
		if b.opts.OnPower != nil {
			b.opts.OnPower(false, "")
		}
	}}
	return b
}

// Server is a fake BMC listening on HTTPS.
type Server struct {
	*bmctest.Server
	*BMC
}

// Start serves a new fake BMC on addr ("127.0.0.1:0" for any free port).
func Start(addr string, opts Options) (*Server, error) {
	b := New(opts)
	srv, err := bmctest.Serve(addr, b)
	if err != nil {
		return nil, err
	}
	return &Server{Server: srv, BMC: b}, nil
}

// PowerState is "On" or "Off" as the system is now.
func (b *BMC) PowerState() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.power.Settle()
	return onOff(b.power.On())
}

// SetPower sets the power state at once, for a test's setup.
func (b *BMC) SetPower(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.power.Set(on)
}

// Boots counts the times the system started.
func (b *BMC) Boots() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.power.Settle()
	return b.boots
}

// Boot is the boot source override.
func (b *BMC) Boot() redfish.Boot {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.power.Settle()
	return b.boot
}

// LastBoot is the boot source the system last started from (the
// override's target, else Hdd); "" before its first start.
func (b *BMC) LastBoot() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.power.Settle()
	return b.lastBoot
}

// Media is the state of the device that takes mediaType.
func (b *BMC) Media(mediaType string) Media {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.media {
		if slices.Contains(m.Types, mediaType) {
			return *m
		}
	}
	return Media{}
}

// RefuseVirtualMedia makes every insert fail.
func (b *BMC) RefuseVirtualMedia(refuse bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refuseVM = refuse
}

// FailMediaTasks makes every insert answer with a task that ends in
// Exception with message, nothing inserted, as an iLO 5 does that accepts
// the request and then cannot mount the image; "" ends it.
func (b *BMC) FailMediaTasks(message string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failTask = message
}

// SetPassword changes the password the fake accepts; open sessions end.
func (b *BMC) SetPassword(p string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.opts.Password = p
	b.tokens = map[string]string{}
}

// Sessions counts the open sessions.
func (b *BMC) Sessions() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.tokens)
}

func onOff(on bool) string {
	if on {
		return redfish.PowerOn
	}
	return redfish.PowerOff
}

// start is a boot, which uses up a one-time override.
func (b *BMC) start() {
	b.boots++
	b.lastBoot = redfish.BootHdd
	if b.boot.Enabled != redfish.BootDisabled && b.boot.Target != redfish.BootNone {
		b.lastBoot = b.boot.Target
	}
	if b.boot.Enabled == redfish.BootOnce {
		b.boot = redfish.Boot{Target: redfish.BootNone, Enabled: redfish.BootDisabled}
	}
	if b.opts.OnPower != nil {
		b.opts.OnPower(true, b.lastBoot)
	}
}

// ServeHTTP answers the Redfish resources the fake has.
func (b *BMC) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.Pass(r)
	path := strings.TrimRight(r.URL.Path, "/")
	if path == "/redfish/v1" && r.Method == http.MethodGet {
		writeJSON(w, http.StatusOK, map[string]any{"@odata.id": "/redfish/v1", "RedfishVersion": "1.6.0",
			"Systems": link("/redfish/v1/Systems"), "Managers": link("/redfish/v1/Managers"),
			"SessionService": link("/redfish/v1/SessionService")})
		return
	}
	if path == sessions && r.Method == http.MethodPost {
		b.login(w, r)
		return
	}
	if !b.authorized(r) {
		writeError(w, http.StatusUnauthorized, "Base.1.8.NoValidSession", "There is no valid session established with the implementation.")
		return
	}
	b.route(w, r, path)
}

func (b *BMC) route(w http.ResponseWriter, r *http.Request, path string) {
	switch {
	case strings.HasPrefix(path, sessions+"/") && r.Method == http.MethodDelete:
		b.mu.Lock()
		delete(b.tokens, strings.TrimPrefix(path, sessions+"/"))
		b.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case path == "/redfish/v1/Systems" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, members(systemPath))
	case path == systemPath && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, b.system())
	case path == systemPath && r.Method == http.MethodPatch:
		b.patchSystem(w, r)
	case path == systemPath+"/Actions/ComputerSystem.Reset" && r.Method == http.MethodPost:
		b.reset(w, r)
	case path == "/redfish/v1/Managers" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, members(managerPath))
	case path == managerPath && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"@odata.id": managerPath, "Id": "1", "VirtualMedia": link(managerPath + "/VirtualMedia")})
	case path == managerPath+"/VirtualMedia" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, members(mediaPath+"1", mediaPath+"2"))
	case strings.HasPrefix(path, mediaPath):
		b.mediaRoute(w, r, strings.TrimPrefix(path, mediaPath))
	case strings.HasPrefix(path, monitors) && r.Method == http.MethodGet:
		b.monitor(w, strings.TrimPrefix(path, monitors))
	default:
		writeError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "The resource at the URI "+path+" was not found.")
	}
}

func (b *BMC) login(w http.ResponseWriter, r *http.Request) {
	var creds struct{ UserName, Password string }
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&creds); err != nil {
		writeError(w, http.StatusBadRequest, "Base.1.8.MalformedJSON", "The request body submitted was malformed JSON.")
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.credentialsMatch(creds.UserName, creds.Password) {
		writeError(w, http.StatusUnauthorized, "Base.1.8.NoValidSession", "Invalid login credentials.")
		return
	}
	b.nextID++
	id := strconv.Itoa(b.nextID)
	token := fmt.Sprintf("token-%d-%d", b.nextID, time.Now().UnixNano())
	b.tokens[id] = token
	w.Header().Set("X-Auth-Token", token)
	w.Header().Set("Location", sessions+"/"+id)
	writeJSON(w, http.StatusCreated, map[string]any{"@odata.id": sessions + "/" + id, "Id": id, "UserName": creds.UserName})
}

func (b *BMC) credentialsMatch(user, pass string) bool {
	return subtle.ConstantTimeCompare([]byte(user), []byte(b.opts.Username)) == 1 &&
		subtle.ConstantTimeCompare([]byte(pass), []byte(b.opts.Password)) == 1
}

func (b *BMC) authorized(r *http.Request) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := r.Header.Get("X-Auth-Token"); t != "" {
		for _, v := range b.tokens {
			if subtle.ConstantTimeCompare([]byte(t), []byte(v)) == 1 {
				return true
			}
		}
		return false
	}
	user, pass, ok := r.BasicAuth()
	return ok && b.credentialsMatch(user, pass)
}

var (
	resetTypes = []string{redfish.ResetOn, redfish.ResetForceOn, redfish.ResetForceOff, redfish.ResetGracefulShutdown,
		redfish.ResetGracefulRestart, redfish.ResetForceRestart, redfish.ResetPowerCycle, redfish.ResetPushPowerButton, redfish.ResetNmi}
	bootTargets = []string{redfish.BootNone, redfish.BootPxe, redfish.BootHdd, redfish.BootCd}
	bootEnabled = []string{redfish.BootDisabled, redfish.BootOnce, redfish.BootContinuous}
)

func (b *BMC) system() map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.power.Settle()
	return map[string]any{
		"@odata.id": systemPath, "Id": "1", "Model": b.opts.Model, "PowerState": onOff(b.power.On()),
		"Boot": map[string]any{
			"BootSourceOverrideTarget":                         b.boot.Target,
			"BootSourceOverrideEnabled":                        b.boot.Enabled,
			"BootSourceOverrideTarget@Redfish.AllowableValues": bootTargets,
		},
		"Actions": map[string]any{"#ComputerSystem.Reset": map[string]any{
			"target": systemPath + "/Actions/ComputerSystem.Reset", "ResetType@Redfish.AllowableValues": resetTypes}},
	}
}

func (b *BMC) patchSystem(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Boot *redfish.Boot `json:"Boot"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&body); err != nil || body.Boot == nil {
		writeError(w, http.StatusBadRequest, "Base.1.8.MalformedJSON", "The request body submitted was malformed JSON.")
		return
	}
	if body.Boot.Target != "" && !slices.Contains(bootTargets, body.Boot.Target) {
		writeError(w, http.StatusBadRequest, "Base.1.8.PropertyValueNotInList",
			"The value "+body.Boot.Target+" for the property BootSourceOverrideTarget is not in the list of acceptable values.")
		return
	}
	if body.Boot.Enabled != "" && !slices.Contains(bootEnabled, body.Boot.Enabled) {
		writeError(w, http.StatusBadRequest, "Base.1.8.PropertyValueNotInList",
			"The value "+body.Boot.Enabled+" for the property BootSourceOverrideEnabled is not in the list of acceptable values.")
		return
	}
	b.mu.Lock()
	if body.Boot.Target != "" {
		b.boot.Target = body.Boot.Target
	}
	if body.Boot.Enabled != "" {
		b.boot.Enabled = body.Boot.Enabled
	}
	b.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (b *BMC) reset(w http.ResponseWriter, r *http.Request) {
	var body struct{ ResetType string }
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "Base.1.8.MalformedJSON", "The request body submitted was malformed JSON.")
		return
	}
	if !slices.Contains(resetTypes, body.ResetType) {
		writeError(w, http.StatusBadRequest, "Base.1.8.ActionParameterValueNotInList",
			"The value "+body.ResetType+" for the parameter ResetType in the action ComputerSystem.Reset is not in the list of acceptable values.")
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.power.Settle()
	on := b.power.On()
	switch body.ResetType {
	case redfish.ResetOn, redfish.ResetForceOn:
		b.power.Schedule(true)
	case redfish.ResetForceOff, redfish.ResetGracefulShutdown:
		b.power.Schedule(false)
	case redfish.ResetPushPowerButton:
		b.power.Schedule(!on)
	case redfish.ResetForceRestart, redfish.ResetGracefulRestart, redfish.ResetPowerCycle:
		if on {
			b.start()
		} else {
			b.power.Schedule(true)
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func (b *BMC) mediaRoute(w http.ResponseWriter, r *http.Request, rest string) {
	id, action, _ := strings.Cut(rest, "/Actions/")
	b.mu.Lock()
	m, ok := b.media[id]
	var snapshot Media
	if ok {
		snapshot = *m
	}
	b.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "The resource at the URI "+r.URL.Path+" was not found.")
		return
	}
	self := mediaPath + id
	switch {
	case action == "" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{
			"@odata.id": self, "Id": id, "MediaTypes": snapshot.Types, "Image": snapshot.Image,
			"Inserted": snapshot.Inserted, "WriteProtected": snapshot.WriteProtected,
			"Actions": map[string]any{
				"#VirtualMedia.InsertMedia": map[string]string{"target": self + "/Actions/VirtualMedia.InsertMedia"},
				"#VirtualMedia.EjectMedia":  map[string]string{"target": self + "/Actions/VirtualMedia.EjectMedia"},
			},
		})
	case action == "VirtualMedia.InsertMedia" && r.Method == http.MethodPost:
		b.insert(w, r, id)
	case action == "VirtualMedia.EjectMedia" && r.Method == http.MethodPost:
		b.mu.Lock()
		defer b.mu.Unlock()
		if !m.Inserted {
			writeError(w, http.StatusBadRequest, "Base.1.8.ActionNotSupported", "There is no media to eject.")
			return
		}
		*m = Media{Types: m.Types}
		w.WriteHeader(http.StatusNoContent)
	default:
		writeError(w, http.StatusMethodNotAllowed, "Base.1.8.OperationNotAllowed", "The operation is not allowed on "+self+".")
	}
}

func (b *BMC) insert(w http.ResponseWriter, r *http.Request, id string) {
	var body struct {
		Image          string
		Inserted       *bool
		WriteProtected *bool
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&body); err != nil || body.Image == "" {
		writeError(w, http.StatusBadRequest, "Base.1.8.ActionParameterMissing", "The action VirtualMedia.InsertMedia requires the parameter Image to be present in the request body.")
		return
	}
	b.mu.Lock()
	m := b.media[id]
	if m.Inserted {
		b.mu.Unlock()
		writeError(w, http.StatusConflict, "Base.1.8.ResourceInUse", "The media device already holds an image; eject it first.")
		return
	}
	async, taskDelay, failure := b.opts.AsyncMedia, b.opts.TaskDelay, b.failTask
	b.mu.Unlock()
	wp := body.WriteProtected == nil || *body.WriteProtected
	if !async && failure == "" {
		if msg := b.mount(id, body.Image, wp); msg != "" {
			writeError(w, http.StatusBadRequest, "Base.1.8.GeneralError", msg)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	b.mu.Lock()
	b.nextID++
	tid := strconv.Itoa(b.nextID)
	t := &taskState{done: time.Now().Add(taskDelay), state: "Running"}
	b.tasks[tid] = t
	b.mu.Unlock()
	go func() {
		msg := failure
		if msg == "" {
			msg = b.mount(id, body.Image, wp)
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		t.state, t.message = redfish.TaskCompleted, ""
		if msg != "" {
			t.state, t.message = redfish.TaskException, msg
		}
	}()
	w.Header().Set("Location", monitors+tid)
	writeJSON(w, http.StatusAccepted, map[string]any{"@odata.id": monitors + tid, "TaskState": "Running"})
}

// mount checks the image and inserts it; the answer is why it failed.
func (b *BMC) mount(id, image string, writeProtected bool) string {
	b.mu.Lock()
	refuse := b.refuseVM
	b.mu.Unlock()
	if refuse {
		return "Virtual media is not available on this server."
	}
	if !bmctest.ImageReachable(image) {
		return "The virtual media image " + image + " could not be reached."
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.media[id]
	m.Inserted, m.Image, m.WriteProtected = true, image, writeProtected
	return ""
}

func (b *BMC) monitor(w http.ResponseWriter, id string) {
	b.mu.Lock()
	t, ok := b.tasks[id]
	var state, msg string
	running := true
	if ok {
		state, msg = t.state, t.message
		running = state == "Running" || time.Now().Before(t.done)
	}
	b.mu.Unlock()
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "The task monitor "+id+" was not found.")
	case running:
		w.Header().Set("Location", monitors+id)
		writeJSON(w, http.StatusAccepted, map[string]any{"@odata.id": monitors + id, "TaskState": "Running"})
	default:
		task := map[string]any{"@odata.id": "/redfish/v1/TaskService/Tasks/" + id, "Id": id, "TaskState": state}
		if msg != "" {
			task["Messages"] = []map[string]string{{"MessageId": "Base.1.8.GeneralError", "Message": msg}}
		}
		writeJSON(w, http.StatusOK, task)
	}
}

func link(p string) map[string]string { return map[string]string{"@odata.id": p} }

func members(paths ...string) map[string]any {
	ms := make([]map[string]string, len(paths))
	for i, p := range paths {
		ms[i] = link(p)
	}
	return map[string]any{"Members": ms, "Members@odata.count": len(ms)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, id, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{
		"code": id, "message": msg,
		"@Message.ExtendedInfo": []map[string]string{{"MessageId": id, "Message": msg}},
	}})
}
