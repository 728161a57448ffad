package hashring_test

import (
	"crypto/md5"
	"fmt"
	"math/big"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/hashring"
)

func md5Int(s string) *big.Int {
	sum := md5.Sum([]byte(s))
	return new(big.Int).SetBytes(sum[:])
}

// owner finds key's host the slow way: the smallest point strictly above
// md5(key), else the smallest point overall.
func owner(points map[string]string, key string) string {
	k := md5Int(key)
	var best, lowest *big.Int
	var bestHost, lowestHost string
	for p, host := range points {
		v, _ := new(big.Int).SetString(p, 10)
		if lowest == nil || v.Cmp(lowest) < 0 {
			lowest, lowestHost = v, host
		}
		if v.Cmp(k) > 0 && (best == nil || v.Cmp(best) < 0) {
			best, bestHost = v, host
		}
	}
	if best == nil {
		return lowestHost
	}
	return bestHost
}

// keys returns n deterministic UUID-shaped node identifiers.
func keys(n int) []string {
	out := make([]string, n)
	for i := range out {
		s := md5.Sum([]byte(fmt.Sprint("node", i)))
		out[i] = fmt.Sprintf("%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16])
	}
	return out
}

var _ = Describe("Ring", func() {
	It("places md5(h·h), md5(h·h·h), ... and bisects right", func() {
		points := map[string]string{
			md5Int("aa").String():  "a",
			md5Int("aaa").String(): "a",
			md5Int("bb").String():  "b",
			md5Int("bbb").String(): "b",
		}
		ring := hashring.New([]string{"a", "b"}, 1)
		for _, k := range keys(500) {
			host, ok := ring.Get(k)
			Expect(ok).To(BeTrue())
			Expect(host).To(Equal(owner(points, k)), k)
		}
	})

	It("wraps past the highest point to the lowest", func() {
		points := map[string]string{}
		hosts := []string{"cond-a", "cond-b", "cond-c"}
		for _, h := range hosts {
			seed := h
			for range 4 {
				seed += h
				points[md5Int(seed).String()] = h
			}
		}
		max := new(big.Int)
		for p := range points {
			v, _ := new(big.Int).SetString(p, 10)
			if v.Cmp(max) > 0 {
				max = v
			}
		}
		ring := hashring.New(hosts, 2)
		wrapped := 0
		for i := range 20000 {
			k := fmt.Sprint("wrap-", i)
			if md5Int(k).Cmp(max) < 0 {
				continue
			}
			wrapped++
			host, _ := ring.Get(k)
			Expect(host).To(Equal(owner(points, k)))
		}
		Expect(wrapped).To(BeNumerically(">", 0))
	})

	// Expected owners computed with Python's hashlib and bisect.bisect_right
	// following the tooz construction (3 hosts, exponent 5).
	DescribeTable("agrees with the reference implementation",
		func(key, host string) {
			got, ok := hashring.New([]string{"cond-a", "cond-b", "cond-c"}, 5).Get(key)
			Expect(ok).To(BeTrue())
			Expect(got).To(Equal(host))
		},
		Entry(nil, "1be26c0b-03f2-4d2e-ae87-c02d7f33c123", "cond-c"),
		Entry(nil, "6a3c1f49-7d54-4a39-9a3e-6a1a6d2c2e57", "cond-b"),
		Entry(nil, "a7f1b2c3-9d8e-4f6a-b5c4-d3e2f1a0b9c8", "cond-c"),
		Entry(nil, "00000000-0000-0000-0000-000000000000", "cond-a"),
		Entry(nil, "f0000000-0000-0000-0000-000000000000", "cond-c"),
		Entry(nil, "ffffffff-ffff-ffff-ffff-ffffffffffff", "cond-c"),
		Entry(nil, "node-x", "cond-a"),
		Entry(nil, "", "cond-a"),
	)

	It("does not depend on the order hosts are given in", func() {
		r1 := hashring.New([]string{"x", "y", "z"}, 5)
		r2 := hashring.New([]string{"z", "x", "y", "x"}, 5)
		for _, k := range keys(1000) {
			h1, _ := r1.Get(k)
			h2, _ := r2.Get(k)
			Expect(h1).To(Equal(h2))
		}
	})

	It("spreads keys over all hosts", func() {
		hosts := []string{"c1", "c2", "c3", "c4"}
		ring := hashring.New(hosts, 5)
		count := map[string]int{}
		ks := keys(8000)
		for _, k := range ks {
			h, _ := ring.Get(k)
			count[h]++
		}
		Expect(count).To(HaveLen(len(hosts)))
		for _, h := range hosts {
			// 32 points per host keep every share within a factor ~2 of fair.
			Expect(count[h]).To(BeNumerically(">", len(ks)/len(hosts)/2), h)
			Expect(count[h]).To(BeNumerically("<", 2*len(ks)/len(hosts)), h)
		}
	})

	It("moves only about 1/N of the keys, all to the new host, when a host joins", func() {
		before := hashring.New([]string{"c1", "c2", "c3", "c4"}, 5)
		after := hashring.New([]string{"c1", "c2", "c3", "c4", "c5"}, 5)
		ks := keys(8000)
		moved := 0
		for _, k := range ks {
			h1, _ := before.Get(k)
			h2, _ := after.Get(k)
			if h1 != h2 {
				moved++
				Expect(h2).To(Equal("c5"))
			}
		}
		Expect(moved).To(BeNumerically(">", len(ks)/5/2))
		Expect(moved).To(BeNumerically("<", len(ks)*2/5))
	})

	It("has no owner when empty", func() {
		_, ok := hashring.New(nil, 5).Get("x")
		Expect(ok).To(BeFalse())
	})
})
