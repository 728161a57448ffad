package iscsi

import (
	"context"
	"fmt"
	"io"
	"time"
)

// BenchWrite measures a deployment-style write: log in to iqn on portal, copy size bytes
// of src to the first disk LUN from offset 0, synchronise the cache and log out. The
// duration covers all of it, like timing `qemu-img convert` end to end.
func BenchWrite(ctx context.Context, portal, iqn string, src io.Reader, size int64) (int64, time.Duration, error) {
	start := time.Now()
	s, err := Dial(ctx, portal, iqn, Options{})
	if err != nil {
		return 0, 0, err
	}
	n, err := benchCopy(ctx, s, src, size)
	if cerr := s.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return n, time.Since(start), err
}

func benchCopy(ctx context.Context, s *Session, src io.Reader, size int64) (int64, error) {
	id, err := s.FirstDisk(ctx)
	if err != nil {
		return 0, err
	}
	lun, err := s.OpenLUN(ctx, id)
	if err != nil {
		return 0, err
	}
	n, err := lun.CopyFrom(ctx, 0, io.LimitReader(src, size))
	if err != nil {
		return n, err
	}
	if n != size {
		return n, fmt.Errorf("source ended after %d of %d bytes", n, size)
	}
	return n, lun.Sync(ctx)
}
