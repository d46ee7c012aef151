package loadtest

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Stats summarises one step's samples.
type Stats struct {
	Count     int            `json:"count"`
	PerSecond float64        `json:"perSecond"` // count over the span from the first start to the last end
	P50       time.Duration  `json:"p50"`
	P95       time.Duration  `json:"p95"`
	P99       time.Duration  `json:"p99"`
	Max       time.Duration  `json:"max"`
	Outcomes  map[string]int `json:"outcomes"`
}

// Summarise computes Stats over samples.
func Summarise(samples []Sample) Stats {
	s := Stats{Count: len(samples), Outcomes: map[string]int{}}
	if len(samples) == 0 {
		return s
	}
	lat := make([]time.Duration, len(samples))
	first, last := samples[0].At-samples[0].Latency, samples[0].At
	for i, x := range samples {
		lat[i] = x.Latency
		s.Outcomes[x.Outcome]++
		first = min(first, x.At-x.Latency)
		last = max(last, x.At)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	s.P50, s.P95, s.P99, s.Max = Percentile(lat, 50), Percentile(lat, 95), Percentile(lat, 99), lat[len(lat)-1]
	// A span under a second (one sample, a burst) would report absurd rates; a second is the unit anyway.
	s.PerSecond = float64(len(samples)) / max(last-first, time.Second).Seconds()
	return s
}

// Percentile is the nearest-rank percentile of sorted durations.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// Point is one value of a time series, t in seconds from the run's start.
type Point struct {
	T float64 `json:"t"`
	V float64 `json:"v"`
}

// Bucket is one bar of a latency histogram: samples with latency in (previous bucket's Le, Le].
type Bucket struct {
	Le    time.Duration `json:"le"`
	Count int           `json:"count"`
}

// HistogramBounds are the histogram's upper bounds; the last bucket takes everything above.
var HistogramBounds = []time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond,
	50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, time.Duration(math.MaxInt64),
}

// WaitBounds are the queue-wait histogram's upper bounds.
var WaitBounds = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 20 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, time.Duration(math.MaxInt64),
}

// Histogram buckets samples' latencies by HistogramBounds.
func Histogram(samples []Sample) []Bucket { return HistogramOf(samples, HistogramBounds) }

// HistogramOf buckets samples' latencies by bounds (ascending, the last taking everything above).
func HistogramOf(samples []Sample, bounds []time.Duration) []Bucket {
	out := make([]Bucket, len(bounds))
	for i, b := range bounds {
		out[i].Le = b
	}
	for _, s := range samples {
		i := sort.Search(len(bounds), func(i int) bool { return s.Latency <= bounds[i] })
		out[min(i, len(out)-1)].Count++
	}
	return out
}

// perSecond is the rate of samples with outcome over the run, in buckets of about a sixtieth of the run (at
// least 100ms), so that a short smoke run and a long premiere both draw a readable curve.
func perSecond(samples []Sample, outcome string, elapsed time.Duration) []Point {
	if len(samples) == 0 {
		return nil
	}
	for _, x := range samples {
		elapsed = max(elapsed, x.At)
	}
	width := max(100*time.Millisecond, (elapsed / 60).Round(100*time.Millisecond))
	n := int(elapsed/width) + 1
	counts := make([]float64, n)
	for _, x := range samples {
		if x.Outcome == outcome {
			counts[int(x.At/width)]++
		}
	}
	out := make([]Point, n)
	for i, c := range counts {
		out[i] = Point{T: (time.Duration(i)*width + width/2).Seconds(), V: c / width.Seconds()}
	}
	return out
}

// FormatDuration prints a latency compactly for tables.
func FormatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Millisecond:
		return strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'f', 0, 64) + "µs"
	case d < time.Second:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + "ms"
	default:
		return strings.TrimSuffix(strconv.FormatFloat(d.Seconds(), 'f', 2, 64), "0") + "s"
	}
}
