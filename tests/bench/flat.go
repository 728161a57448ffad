package main

// tolerance is how far a series may rise and still count as flat: abs
// units plus share of its level. The absolute part absorbs counts that
// step once (a pool's last connection, a worker goroutine), the share the
// noise that grows with the level (the heap between collections).
type tolerance struct {
	abs, share float64
}

// flatness is a series judged by judgeFlat.
type flatness struct {
	// before and after are the means of the middle and the last third of
	// the samples after the warm-up; rise is after - before.
	before, after, rise float64
	// limit is the rise allowed by the tolerance at before's level.
	limit float64
	// judged is false when the series had too few samples to judge.
	judged bool
}

// flat tells whether the series rose no more than its limit.
func (f flatness) flat() bool { return f.rise <= f.limit }

func (f flatness) verdict() string {
	switch {
	case !f.judged:
		return "too short"
	case f.flat():
		return "flat"
	}
	return "NOT flat"
}

// warmUpShare is the share of a run's first samples left out of the
// judgement: pools fill, caches and buffers grow to their working size.
const warmUpShare = 0.25

// judgeFlat compares the mean of the middle third of ys (after the
// warm-up) with the mean of the last third. Averaging a third of the
// samples on each side smooths the noise (garbage collections, keep-alive
// connections coming and going) that would tip a comparison of two
// samples, while a leak, rising all along, still shows as the last third
// standing above the middle one.
func judgeFlat(ys []float64, tol tolerance) flatness {
	steady := ys[int(warmUpShare*float64(len(ys))):]
	// A mean of one sample is no mean.
	third := len(steady) / 3
	if third < 2 {
		return flatness{}
	}
	before := mean(steady[third : 2*third])
	after := mean(steady[len(steady)-third:])
	return flatness{before: before, after: after, rise: after - before,
		limit: tol.abs + tol.share*before, judged: true}
}

func mean(ys []float64) float64 {
	var sum float64
	for _, y := range ys {
		sum += y
	}
	return sum / float64(len(ys))
}
