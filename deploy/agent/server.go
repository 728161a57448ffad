package agent

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/ferricbm/ferric/pkg/logging"
)

// TokenHeader carries the agent token on every call to the agent API. A
// header, not a query parameter: URLs end up in proxy and access logs.
const TokenHeader = "X-Agent-Token"

// RequestIDHeader carries, on the conductor's calls to the agent, the
// request id of the work making them (Ironic's header), which the agent
// logs: an operator follows one deploy from the API into the ramdisk.
const RequestIDHeader = "X-Openstack-Request-Id"

// Handler serves the IPA-compatible agent API:
//
//	GET  /                      API versions
//	GET  /v1/status             {"started_at", "version"}
//	GET  /v1/commands           {"commands": [<result>...]} in execution order
//	GET  /v1/commands/{id}      one result; ?wait=true blocks until it finishes
//	POST /v1/commands           {"name": "<ext>.<cmd>", "params": {...}}; ?wait=true
//	                            blocks
//	GET  /v1/checksums          ?offset=&length=&block_size=: CRC-32C of each block of
//	                            the exported disk (a Ferric extension)
//
// Every call but the first two needs the agent token in TokenHeader: command
// parameters and results carry node secrets, and commands erase disks. Until
// the agent holds a token it refuses them all.
func (a *Agent) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", a.versions)
	mux.HandleFunc("GET /v1/status", a.status)
	mux.HandleFunc("GET /v1/commands", a.authorized(a.listCommands))
	mux.HandleFunc("GET /v1/commands/{$}", a.authorized(a.listCommands))
	mux.HandleFunc("GET /v1/commands/{id}", a.authorized(a.getCommand))
	mux.HandleFunc("POST /v1/commands", a.authorized(a.runCommand))
	mux.HandleFunc("POST /v1/commands/{$}", a.authorized(a.runCommand))
	mux.HandleFunc("GET /v1/checksums", a.authorized(a.checksums))
	return mux
}

// authorized lets a request through only with the agent's token.
func (a *Agent) authorized(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !a.validToken(r.Header.Get(TokenHeader)) {
			writeError(w, unauthorized())
			return
		}
		h(w, r)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, err error) {
	var rest *RESTError
	if !errors.As(err, &rest) {
		rest = commandExecutionError(err.Error())
	}
	writeJSON(w, rest.Code, rest)
}

func (a *Agent) versions(w http.ResponseWriter, r *http.Request) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	v1 := map[string]any{"id": "v1", "links": []map[string]string{{"href": scheme + "://" + r.Host + "/v1/", "rel": "self"}}}
	writeJSON(w, http.StatusOK, map[string]any{
		"name":            "OpenStack Ironic Python Agent API",
		"description":     "Ironic Python Agent is a provisioning agent for OpenStack Ironic",
		"versions":        []any{v1},
		"default_version": v1,
	})
}

func (a *Agent) status(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"started_at": float64(a.started.UnixNano()) / 1e9, "version": Version})
}

func (a *Agent) listCommands(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"commands": a.cmds.list()})
}

// waitParam reads ?wait=; IPA accepts the strings true/false.
func waitParam(r *http.Request) bool {
	b, _ := strconv.ParseBool(r.URL.Query().Get("wait"))
	return b
}

func (a *Agent) getCommand(w http.ResponseWriter, r *http.Request) {
	e, ok := a.cmds.get(r.PathValue("id"))
	if !ok {
		writeError(w, notFound("Command Result", r.PathValue("id")))
		return
	}
	a.replyCommand(w, r, e)
}

func (a *Agent) runCommand(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name   *string        `json:"name"`
		Params map[string]any `json:"params"`
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil || json.Unmarshal(data, &body) != nil || body.Name == nil {
		writeError(w, invalidCommand("Missing or invalid name or params"))
		return
	}
	log := a.log.WithField("command", *body.Name)
	if id := r.Header.Get(RequestIDHeader); logging.ValidRequestID(id) {
		log = logging.WithRequestID(log, id)
	}
	log.Info("Executing command")
	e, err := a.cmds.start(r.Context(), *body.Name, body.Params)
	if err != nil {
		writeError(w, err)
		return
	}
	a.replyCommand(w, r, e)
}

// replyCommand answers with the command's state, once it has ended when
// the caller asked to wait.
func (a *Agent) replyCommand(w http.ResponseWriter, r *http.Request, e *entry) {
	if waitParam(r) {
		select {
		case <-e.done:
		case <-r.Context().Done():
			return
		}
	}
	writeJSON(w, http.StatusOK, a.cmds.snapshot(e))
}

func unauthorized() *RESTError {
	return &RESTError{Type: "Unauthorized", Code: http.StatusUnauthorized, Message: "Unauthorized", Details: "Token invalid."}
}

// validToken accepts only the agent's token, compared in constant time; an
// agent without one (it got "******" at lookup) accepts nothing.
func (a *Agent) validToken(got string) bool {
	want := a.token()
	return want != "" && subtle.ConstantTimeCompare([]byte(want), []byte(got)) == 1
}
