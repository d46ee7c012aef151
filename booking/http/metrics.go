package http

import (
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are booking's Prometheus metrics.
type Metrics struct {
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	Holds     prometheus.Counter
	Conflicts prometheus.Counter
	Expired   prometheus.Counter
	Streams   prometheus.Gauge

	// series caches each (route, method, status)'s counter and histogram: looking them up by label values
	// hashes the labels on every request. The map is replaced, never changed, so reads take no lock; a new
	// combination is rare (routes and statuses are few).
	series   atomic.Pointer[map[seriesKey]series]
	seriesMu sync.Mutex
}

type seriesKey struct {
	route, method string
	status        int
}

type series struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// NewMetrics creates the metrics and registers them with reg when it is not nil.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "booking_http_requests_total",
			Help: "HTTP requests by route, method and status."}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "booking_http_request_duration_seconds",
			Help: "HTTP request latency by route.", Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1,
				.25, .5, 1, 2.5}}, []string{"route"}),
		Holds: prometheus.NewCounter(prometheus.CounterOpts{Name: "booking_holds_total",
			Help: "Successful holds."}),
		Conflicts: prometheus.NewCounter(prometheus.CounterOpts{Name: "booking_hold_conflicts_total",
			Help: "Holds refused because a seat was held or sold."}),
		Expired: prometheus.NewCounter(prometheus.CounterOpts{Name: "booking_holds_expired_total",
			Help: "Holds marked EXPIRED by the reconciler."}),
		Streams: prometheus.NewGauge(prometheus.GaugeOpts{Name: "booking_seat_streams",
			Help: "Open seat event streams."}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration, m.Holds, m.Conflicts, m.Expired, m.Streams)
	}
	return m
}

func (m *Metrics) observe(route, method string, status int, d time.Duration) {
	if route == "" || route == "/" {
		route = "other" // unmatched paths must not mint label values
	}
	k := seriesKey{route, method, status}
	if p := m.series.Load(); p != nil {
		if e, ok := (*p)[k]; ok {
			e.requests.Inc()
			e.duration.Observe(d.Seconds())
			return
		}
	}
	e := series{m.requests.WithLabelValues(route, method, strconv.Itoa(status)), m.duration.WithLabelValues(route)}
	e.requests.Inc()
	e.duration.Observe(d.Seconds())
	m.seriesMu.Lock()
	defer m.seriesMu.Unlock()
	old := m.series.Load()
	if old != nil && len(*old) >= 1000 {
		return // more combinations than routes and statuses make: stop caching rather than grow
	}
	next := make(map[seriesKey]series, 1)
	if old != nil {
		next = maps.Clone(*old)
	}
	// Route and method may live in fiber's buffers; the cached key keeps copies.
	next[seriesKey{strings.Clone(route), strings.Clone(method), status}] = e
	m.series.Store(&next)
}
