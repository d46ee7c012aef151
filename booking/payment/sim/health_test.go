package sim_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/flashseat/flashseat/booking/payment/sim"
)

// Container health checks probe /healthz, like booking's and the edge's.
func TestHealthz(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(sim.New(sim.Config{}, nil))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz: %d, want 200", resp.StatusCode)
	}
}
