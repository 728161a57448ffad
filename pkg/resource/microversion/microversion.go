// Package microversion parses and negotiates the Bare Metal API
// microversion (the "1.N" a client asks for in a request header) and holds
// the version each gated feature first appeared in.
package microversion

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/ferricbm/ferric/pkg/errs"
)

// Version is a negotiated microversion. Only major version 1 exists.
type Version struct {
	Major, Minor int
}

// V1 builds version 1.minor.
func V1(minor int) Version { return Version{Major: 1, Minor: minor} }

func (v Version) String() string { return strconv.Itoa(v.Major) + "." + strconv.Itoa(v.Minor) }

// AtLeast reports whether v is the same as or newer than o.
func (v Version) AtLeast(o Version) bool {
	if v.Major != o.Major {
		return v.Major > o.Major
	}
	return v.Minor >= o.Minor
}

// Header names. Go canonicalises header keys, so lookups are
// case-insensitive as HTTP requires.
const (
	HeaderStandard = "OpenStack-API-Version"
	HeaderLegacy   = "X-OpenStack-Ironic-API-Version"
	HeaderMinimum  = "X-OpenStack-Ironic-API-Minimum-Version"
	HeaderMaximum  = "X-OpenStack-Ironic-API-Maximum-Version"
	serviceType    = "baremetal"
)

// The header names as http.Header keys them, for reading and setting them
// on every request without canonicalising the names again.
var (
	keyStandard = http.CanonicalHeaderKey(HeaderStandard)
	keyLegacy   = http.CanonicalHeaderKey(HeaderLegacy)
	keyMinimum  = http.CanonicalHeaderKey(HeaderMinimum)
	keyMaximum  = http.CanonicalHeaderKey(HeaderMaximum)
)

// Min is the oldest microversion served; requests without a version header
// are served as Min.
var Min = V1(1)

// maxMinor is the one constant that sets the newest microversion served.
// Only versions whose every feature (docs/api.md §1.4) works end to end are
// advertised; each of these works at its version and is hidden below it:
//
//	1.1  nodes, ports, drivers (list/show/properties), node states, power
//	     and provision (active/rebuild/deleted, configdrive), maintenance,
//	     validate, boot device, console, node and driver vendor passthru
//	     calls and method discovery
//	1.2  "available" shown as such        1.3  driver_internal_info
//	1.4  manageable, manage/provide       1.5  node names, lookup by name
//	1.6  inspect, inspection_*_at         1.7  clean_step
//	1.8  ?fields=                         1.9  provision_state filter
//	1.10 RFC 3986 node names              1.11 new nodes start in enroll
//	1.12 RAID (states/raid, logical disks) 1.13 abort
//	1.14 states and properties links      1.15 manual clean with clean_steps
//	1.16 driver filter                    1.17 adopt
//	1.20 network_interface                1.21 resource_class (+ filter)
//	1.22 /v1/lookup, /v1/heartbeat        1.27 soft power, power timeout
//	1.28 /v1/nodes/{n}/vifs               1.29 management/inject_nmi
//	1.30 driver type, detail, interfaces  1.31 node *_interface fields
//	1.18 port internal_info               1.19 local_link_connection, pxe_enabled
//	1.23 /v1/portgroups                   1.24 portgroup links, port portgroup_uuid
//	1.25 chassis_uuid removable           1.26 portgroup mode, properties
//
//	1.32 volume connectors and targets   1.33 storage_interface
//	1.34 port physical_network           1.35 configdrive with rebuild
//	1.36 heartbeat agent_version         1.37 node traits (+ /traits)
//	1.38 rescue/unrescue, rescue_interface
//	1.39 "inspect wait" shown as such    1.40 bios_interface, /bios
//	1.41 abort from inspect wait         1.42 fault (+ filter)
//	1.43 ?detail= on lists               1.44 deploy_step
//	1.45 reset_interfaces on PATCH       1.46 conductor_group (+ filter)
//	1.47 automated_clean                 1.48 protected, protected_reason
//	1.49 /v1/conductors, node conductor (+ filter)
//	1.50 node owner (+ filter)            1.51 node description (+ description_contains)
//	1.52 allocations, node allocation_uuid
//	1.53 port is_smartnic                1.54 POST /v1/events
//
// Chassis (/v1/chassis, node chassis_uuid) are served at every version.
const maxMinor = 54

// Max is the newest microversion served.
var Max = V1(maxMinor)

const latest = "latest"

// Negotiate picks the version for a request from its headers (docs/api.md §1.1,
// §1.2). The returned error is a 406; rangeKnown tells whether the
// minimum/maximum headers belong on that 406 (not for malformed values).
func Negotiate(h http.Header) (v Version, rangeKnown bool, err *errs.Error) {
	raw, ok := requested(h)
	if !ok {
		return Min, true, nil
	}
	if strings.EqualFold(strings.TrimSpace(raw), latest) {
		return Max, true, nil
	}
	v, perr := Parse(raw)
	if perr != nil {
		return Version{}, false, perr
	}
	if v.Major != Min.Major {
		return Version{}, true, errs.NotAcceptable("Mutually exclusive versions requested. Version %s requested but not supported by this service. The supported version range is: %s.", v, supportedRange())
	}
	if !v.AtLeast(Min) || !Max.AtLeast(v) {
		return Version{}, true, errs.NotAcceptable("Version %s was requested but the minor version is not supported by this service. The supported version range is: %s.", v, supportedRange())
	}
	return v, true, nil
}

func supportedRange() string { return fmt.Sprintf("[%s, %s]", Min, Max) }

// minString and maxString are Min and Max as the range headers carry them.
var minString, maxString = Min.String(), Max.String()

// SetRange sets the minimum and maximum version headers of a response.
func SetRange(h http.Header) {
	h[keyMinimum] = []string{minString}
	h[keyMaximum] = []string{maxString}
}

// SetVersion sets the negotiated version header of a response.
func SetVersion(h http.Header, v Version) {
	h[keyLegacy] = []string{v.String()}
}

// requested returns the raw version a client asked for: the last
// "baremetal X.Y" item of the standard header, else the last value of the
// legacy header.
func requested(h http.Header) (string, bool) {
	found, val := false, ""
	for _, line := range h[keyStandard] {
		for _, item := range strings.Split(line, ",") {
			fields := strings.Fields(item)
			if len(fields) == 0 || !strings.EqualFold(fields[0], serviceType) {
				continue
			}
			found, val = true, strings.Join(fields[1:], " ")
		}
	}
	if found {
		return val, true
	}
	legacy := h[keyLegacy]
	if len(legacy) == 0 {
		return "", false
	}
	return lastItem(legacy[len(legacy)-1]), true
}

// lastItem is the last item of a comma-separated header value.
func lastItem(line string) string { return line[strings.LastIndexByte(line, ',')+1:] }

// Parse reads "X.Y": exactly two dot-separated non-negative integers,
// surrounding whitespace tolerated.
func Parse(raw string) (Version, *errs.Error) {
	majorText, minorText, ok := strings.Cut(strings.TrimSpace(raw), ".")
	if !ok || strings.Contains(minorText, ".") {
		return Version{}, invalid()
	}
	major, err1 := atoi(majorText)
	minor, err2 := atoi(minorText)
	if err1 != nil || err2 != nil {
		return Version{}, invalid()
	}
	return Version{Major: major, Minor: minor}, nil
}

func invalid() *errs.Error { return errs.NotAcceptable("Invalid value for %s header", HeaderLegacy) }

func atoi(s string) (int, error) {
	if s == "" || len(s) > 9 {
		return 0, strconv.ErrSyntax
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, strconv.ErrSyntax
		}
	}
	return strconv.Atoi(s)
}

// RequireAtLeast is the 406 for using something newer than v.
func RequireAtLeast(v, need Version) error {
	if v.AtLeast(need) {
		return nil
	}
	return errs.NotAcceptable("Request not acceptable. The minimal required API version should be %s", need)
}

// noJSONSuffix is when a trailing ".json" in the URL stopped being stripped.
var noJSONSuffix = V1(91)

// StripsJSONSuffix reports whether a trailing ".json" on the request path
// is a format suffix to drop rather than part of an identifier: only when
// the legacy header explicitly asks for a version before 1.91 (docs/api.md
// §3.1) and the standard header names no baremetal version.
func StripsJSONSuffix(h http.Header, v Version) bool {
	for _, line := range h[keyStandard] {
		for _, item := range strings.Split(line, ",") {
			if f := strings.Fields(item); len(f) > 0 && strings.EqualFold(f[0], serviceType) {
				return false
			}
		}
	}
	legacy := h[keyLegacy]
	if len(legacy) == 0 {
		return false
	}
	if strings.EqualFold(strings.TrimSpace(lastItem(legacy[len(legacy)-1])), latest) {
		return false
	}
	return !v.AtLeast(noJSONSuffix)
}
