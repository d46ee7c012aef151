package http

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/flashseat/flashseat/edge"
)

// The cached series count what the labelled lookups would.
func TestMetricsRequest(t *testing.T) {
	t.Parallel()
	m := NewMetrics(prometheus.NewRegistry())
	for range 3 {
		m.request(edge.ClassAPI, "POST", 409, 0.002)
	}
	m.request(edge.ClassQueue, "GET", 200, 0.5)
	m.request(edge.Class(99), "GET", 200, 0.5) // an unknown class still counts
	for _, tc := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"api", "POST", "409"}, 3},
		{[]string{"queue", "GET", "200"}, 1},
		{[]string{"api", "GET", "200"}, 1}, // Class(99) is named "api"
		{[]string{"api", "GET", "409"}, 0},
	} {
		var got dto.Metric
		if err := m.requests.WithLabelValues(tc.labels...).Write(&got); err != nil {
			t.Fatal(err)
		}
		if got.GetCounter().GetValue() != tc.want {
			t.Errorf("edge_requests_total%v = %v, want %v", tc.labels, got.GetCounter().GetValue(), tc.want)
		}
	}
	for class, want := range map[string]uint64{"api": 4, "queue": 1, "ops": 0} {
		var got dto.Metric
		if err := m.duration.WithLabelValues(class).(prometheus.Histogram).Write(&got); err != nil {
			t.Fatal(err)
		}
		if got.GetHistogram().GetSampleCount() != want {
			t.Errorf("duration{class=%q} count %d, want %d", class, got.GetHistogram().GetSampleCount(), want)
		}
	}
}
