package main

import (
	"math/rand/v2"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("judgeFlat", func() {
	goroutines := tolerance{abs: 5, share: 0.05}

	series := func(n int, at func(i int) float64) []float64 {
		ys := make([]float64, n)
		for i := range ys {
			ys[i] = at(i)
		}
		return ys
	}

	It("finds a steady series flat", func() {
		f := judgeFlat(series(40, func(int) float64 { return 120 }), goroutines)
		Expect(f.verdict()).To(Equal("flat"))
		Expect(f.rise).To(BeZero())
	})

	It("finds a series that keeps rising not flat", func() {
		// Two goroutines more at every sample: a handler or a worker that
		// never returns.
		f := judgeFlat(series(40, func(i int) float64 { return 100 + 2*float64(i) }), goroutines)
		Expect(f.verdict()).To(Equal("NOT flat"))
		Expect(f.rise).To(BeNumerically("~", 20, 0.01))
	})

	It("finds a series that is noisy around a steady level flat", func() {
		r := rand.New(rand.NewPCG(14, 3))
		f := judgeFlat(series(40, func(int) float64 { return 100 + 30*(r.Float64()-0.5) }), goroutines)
		Expect(f.verdict()).To(Equal("flat"))
	})

	It("leaves the warm-up out", func() {
		// Pools filling over the first quarter, then level.
		f := judgeFlat(series(40, func(i int) float64 { return 100 + 10*float64(min(i, 9)) }), goroutines)
		Expect(f.verdict()).To(Equal("flat"))
	})

	It("does not judge a run too short for two samples a third after its warm-up", func() {
		f := judgeFlat([]float64{100, 110, 120, 130, 140, 150}, goroutines)
		Expect(f.verdict()).To(Equal("too short"))
	})
})
