package iscsi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// BenchWrite measures a deployment-style write: log in to iqn on portal, copy size bytes
// of src to the first disk LUN from offset 0, synchronise the cache and log out. The
// duration covers all of it, like timing `qemu-img convert` end to end.
func BenchWrite(ctx context.Context, portal, iqn string, src io.Reader, size int64) (int64, time.Duration, error) {
	var n int64
	took, err := BenchSession(ctx, portal, iqn, func(ctx context.Context, lun *LUN) error {
		var err error
		n, err = lun.CopyFrom(ctx, 0, io.LimitReader(src, size))
		if err == nil && n != size {
			err = fmt.Errorf("source ended after %d of %d bytes", n, size)
		}
		return err
	})
	return n, took, err
}

// BenchSession times use of a target as a deploy uses it: log in to iqn on portal, run
// use on the first disk LUN, synchronise the LUN's cache and log out.
func BenchSession(ctx context.Context, portal, iqn string, use func(ctx context.Context, lun *LUN) error) (time.Duration, error) {
	start := time.Now()
	s, err := Dial(ctx, portal, iqn, Options{})
	if err != nil {
		return 0, err
	}
	err = func() error {
		id, err := s.FirstDisk(ctx)
		if err != nil {
			return err
		}
		lun, err := s.OpenLUN(ctx, id)
		if err != nil {
			return err
		}
		if err := use(ctx, lun); err != nil {
			return err
		}
		return lun.Sync(ctx)
	}()
	return time.Since(start), errors.Join(err, s.Close())
}
