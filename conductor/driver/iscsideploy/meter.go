package iscsideploy

import (
	"time"

	"github.com/ferricbm/ferric/deploy/iscsi"
)

// Meter counts what the interface writes to nodes' disks; the conductor's
// metrics are one.
type Meter interface {
	// DiskWritten counts bytes written by operation (deploy, erase).
	DiskWritten(operation string, bytes int)
	// ImageWritten records one whole image written successfully.
	ImageWritten(bytes int64, elapsed time.Duration)
}

type noMeter struct{}

func (noMeter) DiskWritten(string, int)           {}
func (noMeter) ImageWritten(int64, time.Duration) {}

// meteredDevice counts the bytes that reach the disk: partition tables
// and filesystems as well as the image, retried writes as often as sent.
// Embedding keeps the device's Sync and BlockSize, which the writers look
// for.
type meteredDevice struct {
	*iscsi.Device
	meter     Meter
	operation string
}

func (d meteredDevice) WriteAt(p []byte, off int64) (int, error) {
	n, err := d.Device.WriteAt(p, off)
	d.meter.DiskWritten(d.operation, n)
	return n, err
}
