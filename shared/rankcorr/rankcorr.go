// Package rankcorr is Spearman's rank correlation, which the load generator's fairness report and the queue's
// order tests both judge admission order by.
package rankcorr

import (
	"math"
	"sort"
)

// Spearman is the rank correlation of x and y: the linear correlation of their fractional ranks (ties share
// the mean rank).
func Spearman(x, y []float64) float64 { return pearson(ranks(x), ranks(y)) }

// ranks turns values into fractional ranks (ties share the mean rank).
func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return v[idx[a]] < v[idx[b]] })
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
			j++
		}
		mean := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[idx[k]] = mean
		}
		i = j + 1
	}
	return r
}

// pearson is the linear correlation of x and y (1 when either is constant).
func pearson(x, y []float64) float64 {
	n := float64(len(x))
	var sx, sy float64
	for i := range x {
		sx += x[i]
		sy += y[i]
	}
	mx, my := sx/n, sy/n
	var cov, vx, vy float64
	for i := range x {
		cov += (x[i] - mx) * (y[i] - my)
		vx += (x[i] - mx) * (x[i] - mx)
		vy += (y[i] - my) * (y[i] - my)
	}
	if vx == 0 || vy == 0 {
		return 1
	}
	return cov / math.Sqrt(vx*vy)
}
