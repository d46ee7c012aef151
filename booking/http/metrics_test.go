package http_test

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	bookinghttp "github.com/flashseat/flashseat/booking/http"
)

// TestRequestMetrics: each request counts once under its route's path, method and status, however the series are
// cached: repeated requests add to one series, HEAD and GET of one route are told apart, and paths no route
// matches share the "other" route rather than minting a label value each.
func TestRequestMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	h := newHarness(t, newEnv(t), func(c *bookinghttp.Config) { c.Registry = reg })
	for range 3 {
		h.do("GET", "/healthz", "", "")
	}
	h.do("HEAD", "/healthz", "", "")
	h.do("GET", "/no/such/page-1", "", "")
	h.do("GET", "/no/such/page-2", "", "")
	h.do("POST", "/api/v1/bookings/hold", "", holdBody(h.env.Show.ID, "A1"))
	h.do("POST", "/api/v1/bookings/hold", h.user("fan"), holdBody(h.env.Show.ID, "A1"))
	h.do("POST", "/api/v1/bookings/hold", h.user("rival"), holdBody(h.env.Show.ID, "A1"))

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	observed := map[string]uint64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch mf.GetName() {
			case "booking_http_requests_total":
				got[fmt.Sprintf("%s %s %s", labels["method"], labels["route"], labels["status"])] = m.GetCounter().GetValue()
			case "booking_http_request_duration_seconds":
				observed[labels["route"]] = m.GetHistogram().GetSampleCount()
			}
		}
	}
	want := map[string]float64{
		"GET /healthz 200":               3,
		"HEAD /healthz 200":              1,
		"GET other 404":                  2,
		"POST /api/v1/bookings/hold 401": 1,
		"POST /api/v1/bookings/hold 201": 1,
		"POST /api/v1/bookings/hold 409": 1,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("requests %q = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("series %v, want %v", got, want)
	}
	if observed["/healthz"] != 4 || observed["other"] != 2 || observed["/api/v1/bookings/hold"] != 3 {
		t.Errorf("durations observed by route: %v", observed)
	}
}
