// Package pulse is what booking reports of its health for the edge's autotune (waitroom/autotune.go): every
// booking replica keeps a Window of its recent answers (the latency of holds, the share of 5xx and 503) and
// publishes a Report of it every second; the edge reads every replica's latest reports (pulse/redis) and Merge
// makes one of them. Reports carry counts, not only ratios, so replicas are weighed by what they served.
package pulse

import (
	"slices"
	"sync"
	"time"
)

// Report is one booking replica's last few seconds.
type Report struct {
	Replica string    `json:"replica"`
	At      time.Time `json:"at"`
	// HoldP99Ms is the 99th percentile of the holds' latency in the window (0: no holds).
	HoldP99Ms float64 `json:"holdP99Ms"`
	Holds     int64   `json:"holds"`
	// Requests counts every answer of the fans' API in the window; Errors5xx those of 500 and above, Unavailable
	// the 503s among them.
	Requests    int64 `json:"requests"`
	Errors5xx   int64 `json:"errors5xx"`
	Unavailable int64 `json:"unavailable"`
	// Breaker is the payment gateway breaker's state on the replica ("closed", "open", "half-open").
	Breaker string `json:"breaker"`
}

// ErrorShare is the share of 5xx answers (503 included) in the report.
func (r Report) ErrorShare() float64 {
	if r.Requests == 0 {
		return 0
	}
	return float64(r.Errors5xx) / float64(r.Requests)
}

// Merge makes one report of several replicas': counts added, the worst p99 (a slow replica slows the fans sent
// to it), and the breaker open if any replica's is.
func Merge(rs []Report) Report {
	var m Report
	for _, r := range rs {
		m.Holds += r.Holds
		m.Requests += r.Requests
		m.Errors5xx += r.Errors5xx
		m.Unavailable += r.Unavailable
		m.HoldP99Ms = max(m.HoldP99Ms, r.HoldP99Ms)
		if r.At.After(m.At) {
			m.At = r.At
		}
		switch {
		case r.Breaker == "open" || m.Breaker == "":
			m.Breaker = r.Breaker
		case r.Breaker == "half-open" && m.Breaker != "open":
			m.Breaker = r.Breaker
		}
	}
	return m
}

// Window records a replica's answers of the last Span: bounded (the latest maxHolds hold latencies), cheap to
// write from every request.
type Window struct {
	Span time.Duration

	mu    sync.Mutex
	holds []sample // ring of the latest holds
	next  int
	reqs  []count // one per second
}

type sample struct {
	at time.Time
	d  time.Duration
}

type count struct {
	sec                     int64
	requests, errs, unavail int64
}

const maxHolds = 4096

// NewWindow returns a window over span (5 s if zero).
func NewWindow(span time.Duration) *Window {
	if span <= 0 {
		span = 5 * time.Second
	}
	return &Window{Span: span}
}

// Observe records one answer: its status, and for a hold its latency.
func (w *Window) Observe(hold bool, status int, d time.Duration, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if hold {
		if len(w.holds) < maxHolds {
			w.holds = append(w.holds, sample{now, d})
		} else {
			w.holds[w.next] = sample{now, d}
			w.next = (w.next + 1) % maxHolds
		}
	}
	sec := now.Unix()
	if n := len(w.reqs); n == 0 || w.reqs[n-1].sec != sec {
		w.reqs = append(w.reqs, count{sec: sec})
		cut := sec - int64(w.Span/time.Second)
		w.reqs = slices.DeleteFunc(w.reqs, func(c count) bool { return c.sec <= cut })
	}
	c := &w.reqs[len(w.reqs)-1]
	c.requests++
	if status >= 500 {
		c.errs++
	}
	if status == 503 {
		c.unavail++
	}
}

// Report sums the window at now.
func (w *Window) Report(replica, breaker string, now time.Time) Report {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := Report{Replica: replica, At: now, Breaker: breaker}
	var ds []time.Duration
	for _, s := range w.holds {
		if now.Sub(s.at) < w.Span {
			ds = append(ds, s.d)
		}
	}
	if len(ds) > 0 {
		slices.Sort(ds)
		r.HoldP99Ms = float64(ds[(len(ds)*99-1)/100]) / float64(time.Millisecond)
		r.Holds = int64(len(ds))
	}
	cut := now.Unix() - int64(w.Span/time.Second)
	for _, c := range w.reqs {
		if c.sec > cut {
			r.Requests += c.requests
			r.Errors5xx += c.errs
			r.Unavailable += c.unavail
		}
	}
	return r
}
