package http

import (
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
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
	// combination is rare (routes and statuses are few). It is keyed by fiber's route, a pointer that lives as
	// long as the app, and the method's number, rather than their text: hashing and comparing a few words, not
	// strings' bytes.
	series   atomic.Pointer[map[seriesKey]series]
	seriesMu sync.Mutex
}

// seriesKey holds no string, so the map hashes it as plain memory.
type seriesKey struct {
	route  *fiber.Route
	method uint16 // methodCode; 0, not cached
	status uint16
}

// methodNames are the methods methodCode numbers, by number: the label values, as constants. A request's method
// string points into fiber's buffer, which the next request on the connection overwrites, and the registry keeps
// label values as given: a GET counted as "POST" once the buffer was reused.
var methodNames = [...]string{"", fiber.MethodGet, fiber.MethodPost, fiber.MethodHead, fiber.MethodPut,
	fiber.MethodDelete, fiber.MethodPatch, fiber.MethodOptions, fiber.MethodConnect, fiber.MethodTrace}

// methodCode numbers the methods fiber routes; 0 for any other.
func methodCode(m string) uint16 {
	switch m {
	case fiber.MethodGet:
		return 1
	case fiber.MethodPost:
		return 2
	case fiber.MethodHead:
		return 3
	case fiber.MethodPut:
		return 4
	case fiber.MethodDelete:
		return 5
	case fiber.MethodPatch:
		return 6
	case fiber.MethodOptions:
		return 7
	case fiber.MethodConnect:
		return 8
	case fiber.MethodTrace:
		return 9
	}
	return 0
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

// observe records a request that ran route (fiber's Ctx.Route after the handlers).
func (m *Metrics) observe(r *fiber.Route, method string, status int, d time.Duration) {
	k := seriesKey{r, methodCode(method), uint16(status)}
	if p := m.series.Load(); p != nil && k.method != 0 && int(k.status) == status {
		if e, ok := (*p)[k]; ok {
			e.requests.Inc()
			e.duration.Observe(d.Seconds())
			return
		}
	}
	route := r.Path
	if route == "" || route == "/" {
		route = "other" // unmatched paths must not mint label values
	}
	if k.method != 0 {
		method = methodNames[k.method]
	} else {
		method = strings.Clone(method)
	}
	e := series{m.requests.WithLabelValues(route, method, strconv.Itoa(status)), m.duration.WithLabelValues(route)}
	e.requests.Inc()
	e.duration.Observe(d.Seconds())
	if k.method == 0 || int(k.status) != status {
		return // a method or status outside the key's range: looked up by labels every time
	}
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
	next[k] = e
	m.series.Store(&next)
}
