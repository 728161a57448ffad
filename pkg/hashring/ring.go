// Package hashring decides which conductor owns a node: a consistent hash
// ring per "conductor group:hardware type" built exactly like Ironic's (tooz)
// ring, so that a node maps to the same host whichever process asks.
package hashring

import (
	"crypto/md5"
	"encoding/binary"
	"slices"
	"sort"
)

// point is a 128-bit md5 digest read as a big-endian integer.
type point struct{ hi, lo uint64 }

func digest(sum [md5.Size]byte) point {
	return point{binary.BigEndian.Uint64(sum[:8]), binary.BigEndian.Uint64(sum[8:])}
}

func (p point) less(q point) bool {
	return p.hi < q.hi || (p.hi == q.hi && p.lo < q.lo)
}

// Ring is an immutable consistent hash ring; safe for concurrent use.
type Ring struct {
	points []point
	hosts  []string // hosts[i] owns points[i]
}

// New places 2^partitionExponent points per host. Each host's points come
// from one running md5 seeded with the host name and fed the name again per
// point, i.e. md5(h·h), md5(h·h·h), ... — the construction every Ironic
// process uses, so placements agree across implementations.
func New(hosts []string, partitionExponent int) *Ring {
	partitions := 1 << partitionExponent
	owner := make(map[point]string, len(hosts)*partitions)
	for _, h := range hosts {
		b := []byte(h)
		hash := md5.New()
		hash.Write(b)
		var sum [md5.Size]byte
		for range partitions {
			hash.Write(b)
			// A collision overwrites, as in the reference implementation.
			owner[digest([md5.Size]byte(hash.Sum(sum[:0])))] = h
		}
	}
	r := &Ring{points: make([]point, 0, len(owner)), hosts: make([]string, 0, len(owner))}
	for p := range owner {
		r.points = append(r.points, p)
	}
	slices.SortFunc(r.points, func(a, b point) int {
		switch {
		case a.less(b):
			return -1
		case b.less(a):
			return 1
		}
		return 0
	})
	for _, p := range r.points {
		r.hosts = append(r.hosts, owner[p])
	}
	return r
}

// Get returns the host owning key: the first point strictly greater than
// md5(key), wrapping past the end. ok is false on an empty ring.
func (r *Ring) Get(key string) (host string, ok bool) {
	if r == nil || len(r.points) == 0 {
		return "", false
	}
	// A plain []byte(key) gets only a 32-byte stack buffer; a UUID is 36.
	var buf [64]byte
	k := digest(md5.Sum(append(buf[:0], key...)))
	i := sort.Search(len(r.points), func(i int) bool { return k.less(r.points[i]) })
	if i == len(r.points) {
		i = 0
	}
	return r.hosts[i], true
}
