package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking/app"
	"github.com/flashseat/flashseat/loadtest/platformtest"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/token"
)

const (
	testAdmin  = "adm_app_test_0123456789"
	testSecret = "app-test-secret-app-test-secret-0123"
)

// startBooking runs booking's Run on a free port over a fresh database and returns its base URL. env overrides
// the test defaults. admissionKeys are the keys booking trusts; nil, it trusts none, or the JWKS at env's
// ADMISSION_JWKS_URL. Run is stopped, and its error checked, at the end of the test.
func startBooking(t testing.TB, env map[string]string, admissionKeys token.KeySource) string {
	t.Helper()
	_, dbURL := pgtest.NewWithURL(t)
	vars := map[string]string{
		"BOOKING_ADDR":  "127.0.0.1:0",
		"DATABASE_URL":  dbURL,
		"ADMIN_TOKEN":   testAdmin,
		"AUTH_SECRET":   testSecret,
		"LOG_LEVEL":     "error",
		"EVENTS_STREAM": testEventStream(t),
		// The tests' webhook receivers are httptest servers on loopback.
		"WEBHOOK_ALLOW_PRIVATE": "true",
	}
	for k, v := range env {
		vars[k] = v
	}
	platformtest.DeleteShowsAfter(t, vars["DATABASE_URL"], vars)
	n := vars["BENCH_POOL"]
	if n == "" {
		n = "8" // tests share the server's 100 connections with many others
	}
	sep := "?"
	if strings.Contains(vars["DATABASE_URL"], "?") {
		sep = "&"
	}
	vars["DATABASE_URL"] += sep + "pool_max_conns=" + n
	cfg, err := app.LoadConfig(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	if admissionKeys == nil && vars["ADMISSION_JWKS_URL"] == "" {
		admissionKeys = token.StaticKeys{} // none trusted; with ADMISSION_JWKS_URL, the edge's are fetched
	}
	cfg.AdmissionKeys = admissionKeys
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	return platformtest.Serve(t, "booking", func(ctx context.Context, ready func(string)) error {
		return app.Run(ctx, cfg, log, ready)
	})
}

type client struct {
	t    testing.TB
	base string
	http *http.Client
}

// call sends a JSON request and decodes a JSON answer into out (when not nil); it returns the status.
func (c client) call(method, path, auth string, in, out any, headers ...string) int {
	c.t.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	hc := c.http
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			c.t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

// seedShow creates the demo hall, an event and a show on sale through the operator API.
func seedShow(c client) string {
	c.t.Helper()
	type row struct {
		Row      string `json:"row"`
		Seats    int    `json:"seats"`
		Category string `json:"category"`
	}
	var rows []row
	for _, r := range app.DemoRows() {
		rows = append(rows, row{r.Label, r.Seats, r.Category})
	}
	var v struct {
		Halls []struct{ HallID string }
	}
	if st := c.call("POST", "/admin/v1/venues", testAdmin, map[string]any{"name": "PVR Forum", "city": "Bangalore",
		"halls": []any{map[string]any{"name": "Screen 1", "rows": rows}}}, &v); st != 201 {
		c.t.Fatalf("venue: %d", st)
	}
	var e struct{ EventID string }
	c.call("POST", "/admin/v1/events", testAdmin, map[string]any{"title": "Premiere", "kind": "movie",
		"durationMinutes": 150}, &e)
	var s struct{ ShowID string }
	if st := c.call("POST", "/admin/v1/shows", testAdmin, map[string]any{"eventId": e.EventID, "hallId": v.Halls[0].HallID,
		"startsAt": time.Now().Add(72 * time.Hour).UTC().Format(time.RFC3339), "saleStartsAt": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339),
		"currency": "INR", "prices": map[string]int{"SILVER": 25000, "GOLD": 45000, "PLATINUM": 80000}}, &s); st != 201 {
		c.t.Fatalf("show: %d", st)
	}
	return s.ShowID
}
