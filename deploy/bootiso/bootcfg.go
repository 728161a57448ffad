package bootiso

import (
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// BootConfig is what a boot ISO starts: the kernel command line per boot mode,
// "" for a mode the ISO has no configuration for.
type BootConfig struct {
	// BIOS is the append line of isolinux.cfg's default label (initrd= and all).
	BIOS string
	// UEFI is the arguments of the first linux (or linuxefi) line of grub.cfg.
	UEFI string
}

// ReadBootConfig finds an ISO's isolinux.cfg (or syslinux.cfg) and grub.cfg,
// wherever they are, and returns the kernel command lines they give; it is an
// error when the ISO has neither.
func ReadBootConfig(r io.ReaderAt) (BootConfig, error) {
	iso, err := OpenISO(r)
	if err != nil {
		return BootConfig{}, err
	}
	var cfg BootConfig
	err = iso.Walk(func(p string, dir bool) error {
		if dir {
			return nil
		}
		switch strings.ToLower(path.Base(p)) {
		case "isolinux.cfg", "syslinux.cfg":
			if cfg.BIOS == "" {
				data, err := iso.ReadFile(p)
				if err != nil {
					return err
				}
				cfg.BIOS = isolinuxAppend(string(data))
			}
		case "grub.cfg":
			if cfg.UEFI == "" {
				data, err := iso.ReadFile(p)
				if err != nil {
					return err
				}
				cfg.UEFI = grubLinux(string(data))
			}
		}
		return nil
	})
	if err != nil {
		return BootConfig{}, fmt.Errorf("read boot configuration: %w", err)
	}
	if cfg.BIOS == "" && cfg.UEFI == "" {
		return BootConfig{}, errors.New("the ISO has no isolinux.cfg append line and no grub.cfg linux line")
	}
	return cfg, nil
}

// isolinuxAppend returns the append line of the default label, or of the
// first label when no default names one.
func isolinuxAppend(cfg string) string {
	var def, label, first string
	appends := map[string]string{}
	for _, line := range strings.Split(cfg, "\n") {
		kw, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToLower(kw) {
		case "default":
			def = rest
		case "label":
			label = rest
		case "append":
			if _, seen := appends[label]; !seen {
				appends[label] = rest
			}
			if first == "" {
				first = rest
			}
		}
	}
	if a, ok := appends[def]; ok {
		return a
	}
	return first
}

// grubLinux returns the arguments after the kernel path of the first linux or
// linuxefi command.
func grubLinux(cfg string) string {
	for _, line := range strings.Split(cfg, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[0] == "linux" || f[0] == "linuxefi") {
			return strings.Join(f[2:], " ")
		}
	}
	return ""
}
