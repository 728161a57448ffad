package bootiso

import (
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/ferricbm/ferric/deploy/floppy"
)

// BuildEFIBoot makes an efiboot.img: a FAT image holding grubEFI as the
// removable-media boot loader EFI/BOOT/BOOTX64.EFI. GRUB images such as
// Debian's monolithic grubx64.efi then find the ISO by its /.disk/info and
// read /boot/grub/grub.cfg from it.
func BuildEFIBoot(grubEFI []byte) (*EFIBoot, error) {
	const slack, round = 128 << 10, 512 << 10
	size := (int64(len(grubEFI)) + slack + round - 1) / round * round
	img, err := floppy.Image{Label: "EFIBOOT", Size: size, Files: []floppy.File{
		{Name: "EFI/BOOT/BOOTX64.EFI", Data: grubEFI}}}.Build()
	if err != nil {
		return nil, fmt.Errorf("build efiboot.img: %w", err)
	}
	return &EFIBoot{Image: img, ImagePath: EFIBootPath, GrubCfgPath: GrubCfgPath}, nil
}

// EFIBootFromISO takes the UEFI boot files from a deploy ISO, as Ironic does:
// the first efiboot.img and grub.cfg found anywhere in it; a boot ISO built
// with them puts its own grub.cfg where the deploy ISO had one.
func EFIBootFromISO(r io.ReaderAt) (*EFIBoot, error) {
	iso, err := OpenISO(r)
	if err != nil {
		return nil, fmt.Errorf("read deploy ISO: %w", err)
	}
	var imgPath, cfgPath string
	err = iso.Walk(func(p string, dir bool) error {
		switch base := strings.ToLower(path.Base(p)); {
		case dir:
		case base == "efiboot.img" && imgPath == "":
			imgPath = p
		case base == "grub.cfg" && cfgPath == "":
			cfgPath = p
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read deploy ISO: %w", err)
	}
	if imgPath == "" || cfgPath == "" {
		return nil, fmt.Errorf("deploy ISO holds no efiboot.img or no grub.cfg")
	}
	img, err := iso.ReadFile(imgPath)
	if err != nil {
		return nil, fmt.Errorf("read deploy ISO: %w", err)
	}
	return &EFIBoot{Image: img, ImagePath: imgPath, GrubCfgPath: cfgPath}, nil
}
