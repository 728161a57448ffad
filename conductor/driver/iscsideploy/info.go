package iscsideploy

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/ferricbm/ferric/conductor/driver/driverinfo"
	"github.com/ferricbm/ferric/conductor/driver/pxe"
	"github.com/ferricbm/ferric/deploy/image"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

// instanceInfo is instance_info parsed and checked (docs/iscsi-deploy.md §1.1).
type instanceInfo struct {
	imageSource string
	// glance is the image's Glance record when image_source names one.
	glance            *image.GlanceImage
	checksum          string
	hashAlgo          string
	hashValue         string
	wholeDisk         bool
	rootMB            int64
	swapMB            int64
	ephemeralMB       int64
	ephemeralFormat   string
	preserveEphemeral bool
	// configDrive: instance_info names a config drive, which the task
	// reads (see task.ConfigDrive) only when the image is written.
	configDrive bool
	bootOption  string
	bootMode    string
	diskLabel   string
}

// wholeDiskImage applies Ironic's rule for images without Glance
// metadata: neither instance_info kernel nor ramdisk means whole disk.
func wholeDiskImage(ii map[string]any) bool {
	_, kernel := ii["kernel"]
	_, ramdisk := ii["ramdisk"]
	return !kernel && !ramdisk
}

var allowedCapabilities = map[string][]string{
	"boot_option":  {"local", "netboot"},
	"boot_mode":    {"bios", "uefi"},
	"disk_label":   {"msdos", "gpt"},
	"secure_boot":  {"true", "false"},
	"trusted_boot": {"true", "false"},
}

// validateCapabilities checks the capabilities Ironic knows the values of,
// in the node's properties and in instance_info.
func validateCapabilities(n *model.Node) error {
	for _, src := range []struct {
		name string
		caps any
	}{{"properties/capabilities", n.Properties["capabilities"]}, {"instance_info/capabilities", n.InstanceInfo["capabilities"]}} {
		for _, key := range []string{"boot_option", "boot_mode", "disk_label", "secure_boot", "trusted_boot"} {
			v := pxe.Capability(src.caps, key)
			if v != "" && !slices.Contains(allowedCapabilities[key], v) {
				return errs.InvalidParameterValue("Invalid %s parameter '%s' in node's %s. Supported values are: %s",
					key, v, src.name, strings.Join(allowedCapabilities[key], ", "))
			}
		}
	}
	return nil
}

// parseInstanceInfo validates instance_info with Ironic's messages. For a
// Glance image it relies on what the deploy recorded (whole disk or not);
// Deploy.instanceInfo asks Glance instead.
func parseInstanceInfo(n *model.Node, defaultBootOption, defaultEphemeralFormat string) (*instanceInfo, error) {
	return parseInstanceInfoWith(n, defaultBootOption, defaultEphemeralFormat, nil)
}

// parseInstanceInfoWith is parseInstanceInfo with the Glance record of
// the image, which decides whether it is a whole-disk image and gives
// its checksum.
func parseInstanceInfoWith(n *model.Node, defaultBootOption, defaultEphemeralFormat string, glance *image.GlanceImage) (*instanceInfo, error) {
	ii := n.InstanceInfo
	info := &instanceInfo{wholeDisk: wholeDiskImage(ii), glance: glance}
	source, _ := ii["image_source"].(string)
	_, isGlance := image.GlanceRef(source)
	switch recorded, ok := n.DriverInternalInfo[wholeDiskKey].(bool); {
	case glance != nil:
		info.wholeDisk = glance.WholeDisk()
	case isGlance && ok:
		info.wholeDisk = recorded
	}
	var missing []string
	if source == "" {
		missing = append(missing, "image_source")
	}
	if !info.wholeDisk && ii["root_gb"] == nil {
		missing = append(missing, "root_gb")
	}
	if len(missing) > 0 {
		return nil, errs.New(errs.KindMissingParameterValue,
			"Cannot validate driver deploy. Some parameters were missing in node's instance_info. Missing are: %s", driverinfo.PyList(missing))
	}
	info.imageSource = source
	u, err := url.Parse(info.imageSource)
	if !isGlance && (err != nil || !(((u.Scheme == "http" || u.Scheme == "https") && u.Host != "") || (u.Scheme == "file" && u.Path != ""))) {
		return nil, errs.InvalidParameterValue("Image %s is neither an http(s) or file URL nor a Glance image id.", info.imageSource)
	}
	ints := map[string]*int64{}
	for _, k := range []string{"root_gb", "swap_mb", "ephemeral_gb"} {
		v, err := intParam(ii[k])
		if err != nil {
			return nil, errs.InvalidParameterValue("Cannot validate parameter for driver deploy. Invalid parameter %s. Reason: %s", k, err)
		}
		if v < 0 {
			return nil, errs.InvalidParameterValue("Cannot validate parameter for driver deploy. Invalid parameter %s. Reason: must not be negative.", k)
		}
		ints[k] = &v
	}
	info.rootMB, info.swapMB, info.ephemeralMB = *ints["root_gb"]*1024, *ints["swap_mb"], *ints["ephemeral_gb"]*1024
	if info.wholeDisk && (info.swapMB > 0 || info.ephemeralMB > 0) {
		return nil, errs.InvalidParameterValue("Cannot deploy whole disk image with swap or ephemeral size set")
	}
	if !info.wholeDisk && info.rootMB == 0 {
		return nil, errs.InvalidParameterValue("Cannot validate parameter for driver deploy. Invalid parameter root_gb. Reason: must be positive for a partition image.")
	}
	info.ephemeralFormat, _ = ii["ephemeral_format"].(string)
	if info.ephemeralFormat == "" && info.ephemeralMB > 0 {
		info.ephemeralFormat = defaultEphemeralFormat
	}
	if v, ok := ii["preserve_ephemeral"]; ok && v != nil {
		b, err := strictBool(v)
		if err != nil {
			return nil, errs.InvalidParameterValue("Cannot validate parameter for driver deploy. Invalid parameter preserve_ephemeral. Reason: %s", err)
		}
		info.preserveEphemeral = b
	}
	if info.preserveEphemeral {
		if err := checkPreserved(n, ints); err != nil {
			return nil, err
		}
	}
	for key, dst := range map[string]*string{"image_checksum": &info.checksum, "image_os_hash_algo": &info.hashAlgo,
		"image_os_hash_value": &info.hashValue} {
		if v, ok := ii[key]; ok && v != nil {
			s, isString := v.(string)
			if !isString {
				return nil, errs.InvalidParameterValue("Cannot validate parameter for driver deploy. Invalid parameter %s. Reason: not a string.", key)
			}
			*dst = s
		}
	}
	if glance != nil {
		// Glance's own record of the image is what its data must match.
		info.checksum, info.hashAlgo, info.hashValue = glance.Checksum, glance.HashAlgo, glance.HashValue
	}
	if info.hashAlgo != "" && !slices.Contains([]string{"md5", "sha256", "sha512"}, strings.ToLower(info.hashAlgo)) {
		return nil, errs.InvalidParameterValue("Unsupported image_os_hash_algo %s; supported are md5, sha256 and sha512.", info.hashAlgo)
	}
	if cd, ok := ii["configdrive"]; ok && cd != nil {
		s, isString := cd.(string)
		if !isString {
			return nil, errs.InvalidParameterValue("Cannot validate parameter for driver deploy. Invalid parameter configdrive. Reason: not a string.")
		}
		info.configDrive = s != ""
	}
	if err := validateCapabilities(n); err != nil {
		return nil, err
	}
	info.bootOption = pxe.BootOption(n, defaultBootOption)
	if info.wholeDisk {
		// A whole-disk image carries its own boot loader.
		info.bootOption = "local"
	}
	info.bootMode = pxe.Capability(n.InstanceInfo["capabilities"], "boot_mode")
	if info.bootMode == "" {
		info.bootMode = pxe.Capability(n.Properties["capabilities"], "boot_mode")
	}
	if info.bootMode == "" {
		info.bootMode = "bios"
	}
	info.diskLabel = pxe.Capability(n.InstanceInfo["capabilities"], "disk_label")
	return info, nil
}

// checkPreserved enforces that a deploy keeping the ephemeral partition
// asks for the layout the previous deploy made.
func checkPreserved(n *model.Node, ints map[string]*int64) error {
	prev, _ := n.DriverInternalInfo["instance"].(map[string]any)
	var diffs []string
	for _, k := range []string{"root_gb", "swap_mb", "ephemeral_gb"} {
		old, err := intParam(prev[k])
		if err != nil || old != *ints[k] {
			diffs = append(diffs, fmt.Sprintf("%s from %v to %d", k, prev[k], *ints[k]))
		}
	}
	if len(diffs) > 0 {
		return errs.InvalidParameterValue("Cannot deploy with preserve_ephemeral: the disk layout changed (%s).", strings.Join(diffs, ", "))
	}
	return nil
}

// intParam accepts JSON numbers and integer strings; nil is 0.
func intParam(v any) (int64, error) {
	switch x := v.(type) {
	case nil:
		return 0, nil
	case float64:
		if x != float64(int64(x)) {
			return 0, fmt.Errorf("%v is not an integer value.", x)
		}
		return int64(x), nil
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case string:
		i, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("'%s' is not an integer value.", x)
		}
		return i, nil
	}
	return 0, fmt.Errorf("%v is not an integer value.", v)
}

// strictBool parses like oslo's strict bool_from_string.
func strictBool(v any) (bool, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "1", "t", "true", "on", "y", "yes":
			return true, nil
		case "0", "f", "false", "off", "n", "no":
			return false, nil
		}
	}
	return false, fmt.Errorf("Unrecognized value '%v', acceptable values are: '0', '1', 'f', 'false', 'n', 'no', 'off', 'on', 't', 'true', 'y', 'yes'", v)
}

// instanceInfo parses the node's instance_info; for a Glance image it
// first looks the image up, which decides whether it is a whole-disk
// image and what its data must hash to.
func (d *Deploy) instanceInfo(ctx context.Context, n *model.Node) (*instanceInfo, error) {
	source, _ := n.InstanceInfo["image_source"].(string)
	id, isGlance := image.GlanceRef(source)
	if !isGlance {
		info, err := parseInstanceInfo(n, d.opts.DefaultBootOption, d.opts.DefaultEphemeralFormat)
		if err != nil {
			return nil, err
		}
		// Checked here, where the options are, and again by the cache
		// when it reads the file.
		if path, local := image.LocalPath(info.imageSource); local {
			if _, err := image.CheckLocalPath(path, d.opts.FileAllowedPaths); err != nil {
				return nil, errs.InvalidParameterValue("Image %s cannot be used: %s", info.imageSource, err)
			}
		}
		return info, nil
	}
	img, err := d.glanceImage(ctx, id)
	if err != nil {
		return nil, err
	}
	return parseInstanceInfoWith(n, d.opts.DefaultBootOption, d.opts.DefaultEphemeralFormat, &img)
}

// glanceImage looks up an image the iscsi deploy can write: active, raw
// or qcow2.
func (d *Deploy) glanceImage(ctx context.Context, id string) (image.GlanceImage, error) {
	switch {
	case d.glanceErr != nil:
		return image.GlanceImage{}, fmt.Errorf("image %s: %w", id, d.glanceErr)
	case d.glance == nil:
		return image.GlanceImage{}, errs.InvalidParameterValue("Image %s is a Glance image id, but no Glance is configured ([glance] auth_type).", id)
	}
	img, err := d.glance.Image(ctx, id)
	if errors.Is(err, image.ErrNotFound) {
		return image.GlanceImage{}, errs.InvalidParameterValue("Image %s could not be found in Glance.", id)
	}
	if err != nil {
		return image.GlanceImage{}, fmt.Errorf("look up image %s: %w", id, err)
	}
	if img.Status != "active" {
		return image.GlanceImage{}, errs.InvalidParameterValue("Image %s is not active in Glance (status %s).", id, img.Status)
	}
	if img.DiskFormat != "raw" && img.DiskFormat != "qcow2" {
		return image.GlanceImage{}, errs.InvalidParameterValue("Image %s has disk_format %q; the iscsi deploy writes raw and qcow2 images.", id, img.DiskFormat)
	}
	return img, nil
}
