package http

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/flashseat/flashseat/edge"
)

// Metrics are the edge's Prometheus series, registered on one registry that /metrics serves.
type Metrics struct {
	requests       *prometheus.CounterVec
	duration       *prometheus.HistogramVec
	upstreamErrors *prometheus.CounterVec
	streams        prometheus.Gauge
	rateLimited    *prometheus.CounterVec
	gateRefusals   *prometheus.CounterVec

	// The series every request touches, looked up once: a label lookup hashes the values under a lock, and the
	// status code would be formatted each time.
	durationByClass [numClasses]prometheus.Observer
	requestsMu      sync.RWMutex
	requestsBy      map[requestKey]prometheus.Counter
}

const numClasses = int(edge.ClassStatic) + 1

type requestKey struct {
	class  edge.Class
	method string // one of methodLabel's constants
	code   int
}

// request counts an answered request and its duration.
func (m *Metrics) request(class edge.Class, method string, code int, seconds float64) {
	k := requestKey{class, method, code}
	m.requestsMu.RLock()
	c, ok := m.requestsBy[k]
	m.requestsMu.RUnlock()
	if !ok {
		c = m.requests.WithLabelValues(class.String(), method, strconv.Itoa(code))
		m.requestsMu.Lock()
		if len(m.requestsBy) < 1024 { // methods and classes are bounded, codes nearly so
			m.requestsBy[k] = c
		}
		m.requestsMu.Unlock()
	}
	c.Inc()
	if int(class) >= 0 && int(class) < numClasses {
		m.durationByClass[class].Observe(seconds)
	} else {
		m.duration.WithLabelValues(class.String()).Observe(seconds)
	}
}

// NewMetrics registers the edge's series, and the Go runtime and process collectors, on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_requests_total", Help: "Requests answered by the edge, by route class, method and status.",
		}, []string{"class", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "edge_request_duration_seconds", Help: "Time to answer, by route class (streams: to the first byte).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"class"}),
		upstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_upstream_errors_total", Help: "Failed upstream exchanges, by reason (unavailable, timeout).",
		}, []string{"reason"}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "edge_proxied_streams", Help: "Streamed upstream answers (event streams) open now.",
		}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_rate_limited_total", Help: "Requests refused with 429, by route class and key (ip, user).",
		}, []string{"class", "key"}),
		gateRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edge_gate_refusals_total", Help: "Requests the admission gate refused, by reason.",
		}, []string{"reason"}),
	}
	m.requestsBy = make(map[requestKey]prometheus.Counter)
	for c := range m.durationByClass {
		m.durationByClass[c] = m.duration.WithLabelValues(edge.Class(c).String())
	}
	reg.MustRegister(m.requests, m.duration, m.upstreamErrors, m.streams, m.rateLimited, m.gateRefusals,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
