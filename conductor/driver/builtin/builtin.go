// Package builtin lists the hardware types compiled into Ferric and builds
// the registry of the enabled ones.
package builtin

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/conductor/driver/fake"
	"github.com/ferricbm/ferric/conductor/driver/ilo"
	"github.com/ferricbm/ferric/conductor/driver/ipmi"
	"github.com/ferricbm/ferric/conductor/driver/iscsideploy"
	"github.com/ferricbm/ferric/conductor/driver/pxe"
	"github.com/ferricbm/ferric/conductor/vmedia/publish"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
)

// PXEIPMIToolName is the classic driver name kept as a hardware type:
// ipmitool power and management, pxe boot, iscsi deploy.
const PXEIPMIToolName = "pxe_ipmitool"

// Registry enables the named hardware types ([conductor]
// enabled_hardware_types) with the default configuration. Each call gets
// its own fake-hardware fleet.
func Registry(enabled []string) (*driver.Registry, error) {
	cfg := config.Defaults()
	cfg.Conductor.EnabledHardwareTypes = enabled
	return Configured(cfg, nil, nil, nil)
}

// Configured enables [conductor] enabled_hardware_types, their drivers
// set up from cfg (the [ipmi], [deploy], [pxe] and [iscsi] sections, power
// timeouts) and logging to log (nil: discarded). isos counts the users of
// shared boot ISOs; nil leaves partition images on virtual-media nodes
// to boot locally only. meter counts the bytes the iSCSI deploy writes;
// nil counts nothing.
func Configured(cfg config.Config, log logrus.FieldLogger, isos ilo.BootISOStore, meter iscsideploy.Meter) (*driver.Registry, error) {
	pxeOpts := pxe.OptionsFrom(cfg, log)
	publisher, err := mediaPublisher(cfg, &pxeOpts)
	if err != nil {
		return nil, err
	}
	boot := pxe.New(pxeOpts)
	deployOpts := iscsideploy.OptionsFrom(cfg, log)
	deployOpts.Meter = meter
	deploy := iscsideploy.New(deployOpts)
	hw := ipmi.New(ipmi.OptionsFrom(cfg, log))
	ipmiType := hw.HardwareType(map[hwcatalog.InterfaceType][]driver.Implementation{
		hwcatalog.Boot:   driver.One(pxe.Name, boot),
		hwcatalog.Deploy: driver.One(iscsideploy.Name, deploy),
		hwcatalog.Vendor: {{Name: "no-vendor", Impl: driver.NoOp{}}, {Name: iscsideploy.Name, Impl: deploy.Vendor()}},
	})
	// The classic driver answered pass_deploy_info without naming a vendor
	// interface.
	classic := hw.HardwareType(map[hwcatalog.InterfaceType][]driver.Implementation{
		hwcatalog.Boot:   driver.One(pxe.Name, boot),
		hwcatalog.Deploy: driver.One(iscsideploy.Name, deploy),
		hwcatalog.Vendor: {{Name: iscsideploy.Name, Impl: deploy.Vendor()}, {Name: "no-vendor", Impl: driver.NoOp{}}},
	})
	classic.Name = PXEIPMIToolName

	bmcs := ilo.New(ilo.OptionsFrom(cfg, log))
	media := ilo.BootOptions{
		Publisher:         publisher,
		DefaultBootOption: cfg.Deploy.DefaultBootOption,
		MediaLifetime:     time.Duration(cfg.ILO.SwiftObjectExpiryTimeout) * time.Second,
		BootISOs:          isos,
		Fetch:             boot.Fetch,
		AppendParams:      cfg.PXE.PXEAppendParams,
		Glance:            deploy.Glance,
		Downloads:         pxeOpts.Downloads,
	}
	iloBoot := []driver.Implementation{{Name: ilo.ILOBootName, Impl: bmcs.Boot(bmcs.ILO(), media)}, {Name: pxe.Name, Impl: boot}}
	iloType := bmcs.HardwareType(ilo.Name, bmcs.ILO(), map[hwcatalog.InterfaceType][]driver.Implementation{
		hwcatalog.Boot:   iloBoot,
		hwcatalog.Deploy: driver.One(iscsideploy.Name, deploy),
		hwcatalog.Vendor: {{Name: "no-vendor", Impl: driver.NoOp{}}, {Name: iscsideploy.Name, Impl: deploy.Vendor()}},
	})
	iloClassic := bmcs.HardwareType(ilo.ClassicName, bmcs.ILO(), map[hwcatalog.InterfaceType][]driver.Implementation{
		hwcatalog.Boot:   iloBoot,
		hwcatalog.Deploy: driver.One(iscsideploy.Name, deploy),
		hwcatalog.Vendor: {{Name: iscsideploy.Name, Impl: deploy.Vendor()}, {Name: "no-vendor", Impl: driver.NoOp{}}},
	})
	redfishType := bmcs.HardwareType(ilo.RedfishName, bmcs.Redfish(), map[hwcatalog.InterfaceType][]driver.Implementation{
		hwcatalog.Boot:   {{Name: ilo.RedfishBootName, Impl: bmcs.Boot(bmcs.Redfish(), media)}, {Name: pxe.Name, Impl: boot}},
		hwcatalog.Deploy: driver.One(iscsideploy.Name, deploy),
		hwcatalog.Vendor: {{Name: "no-vendor", Impl: driver.NoOp{}}, {Name: iscsideploy.Name, Impl: deploy.Vendor()}},
	})
	return driver.NewRegistry(cfg.Conductor.EnabledHardwareTypes, fake.New().HardwareType(), ipmiType, classic,
		iloType, iloClassic, redfishType)
}

// mediaPublisher is where the virtual-media boot interfaces publish the
// parameter floppy. With [ilo] use_web_server_for_images and a virtual-media
// hardware type enabled, that is the boot file server, which then serves
// the media folder through signed URLs; otherwise the publisher is made at
// first use, so a missing [deploy] http_url or an unreachable Swift fails
// the deploy that needs it, not the conductor's start.
func mediaPublisher(cfg config.Config, files *pxe.Options) (func(context.Context) (publish.Publisher, error), error) {
	vmedia := slices.ContainsFunc(cfg.Conductor.EnabledHardwareTypes, func(hw string) bool {
		return hw == ilo.Name || hw == ilo.ClassicName || hw == ilo.RedfishName
	})
	if vmedia && cfg.ILO.UseWebServerForImages && cfg.Deploy.HTTPURL != "" {
		web, err := publish.NewWebServer(filepath.Join(cfg.Deploy.HTTPRoot, strings.Trim(publish.Prefix, "/")), cfg.Deploy.HTTPURL)
		if err != nil {
			return nil, err
		}
		files.Media = web
		return func(context.Context) (publish.Publisher, error) { return web, nil }, nil
	}
	var (
		mu  sync.Mutex
		pub publish.Publisher
	)
	return func(ctx context.Context) (publish.Publisher, error) {
		mu.Lock()
		defer mu.Unlock()
		if pub != nil {
			return pub, nil
		}
		p, err := publish.New(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("virtual media publisher: %w", err)
		}
		pub = p
		return pub, nil
	}, nil
}
