package app

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/flashseat/flashseat/shared/audit"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/pulse"
	pulseredis "github.com/flashseat/flashseat/shared/pulse/redis"
	"github.com/flashseat/flashseat/shared/rediskey"
)

// TestAutotune: an edge with autotune on for a show follows booking's pulse, as booking replicas publish it in
// Redis: slow holds lower the rate, fast ones raise it again, within the operator's bounds; GET answers the rate
// and the reason; switching autotune off keeps the last rate.
func TestAutotune(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := testRedis(t)
	show := newShow(t, rdb)
	onSale(t, rdb, show)
	rdb.HSet(ctx, rediskey.ShowInfo(show), rediskey.InfoAvailable, 5000) // the seats' cap stays out of it
	ns := "pulse-test-" + uuid.NewString()
	const adminToken = "adm_edge_autotune_0123456789"
	pool, dbURL := pgtest.NewWithURL(t)
	edge := startEdge(t, map[string]string{"ADMIN_TOKEN": adminToken, "AUTOTUNE_EVERY": "150ms",
		"PULSE_NAMESPACE": ns, "DATABASE_URL": dbURL})
	auth := map[string]string{"Authorization": "Bearer " + adminToken}
	path := edge + "/admin/v1/shows/" + show + "/queue"
	if res, b := do(t, "PUT", path, `{"mode":"always","admitPerSecond":20,"autotune":{"enabled":true,`+
		`"minAdmitPerSecond":2,"maxAdmitPerSecond":40,"targetHoldP99Ms":200}}`, auth); res.StatusCode != 200 {
		t.Fatalf("PUT: %d %s", res.StatusCode, b)
	}
	type figures struct {
		AdmitPerSecondNow float64 `json:"admitPerSecondNow"`
		AutotuneReason    string  `json:"autotuneReason"`
	}
	get := func() figures {
		t.Helper()
		res, b := do(t, "GET", path, "", auth)
		var f figures
		if res.StatusCode != 200 || json.Unmarshal(b, &f) != nil {
			t.Fatalf("GET: %d %s", res.StatusCode, b)
		}
		return f
	}
	// report publishes what a booking replica would while holds take p99.
	report := func(p99 float64) {
		if err := pulseredis.Publish(ctx, rdb, ns, pulse.Report{Replica: "b1", At: time.Now(), HoldP99Ms: p99,
			Holds: 100, Requests: 1000, Breaker: "closed"}); err != nil {
			t.Fatal(err)
		}
	}
	until := func(what string, ok func(figures) bool, p99 float64) figures {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			report(p99)
			f := get()
			if ok(f) {
				return f
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: last %+v", what, f)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	f := until("slow holds bring the rate to the minimum", func(f figures) bool { return f.AdmitPerSecondNow == 2 }, 900)
	if f.AutotuneReason == "" {
		t.Fatalf("no reason given: %+v", f)
	}
	until("fast holds bring it to the maximum", func(f figures) bool { return f.AdmitPerSecondNow == 40 }, 20)

	// The audit log says autotune made the changes.
	entries, err := audit.New(pool).List(ctx, audit.Filter{ShowID: show})
	if err != nil {
		t.Fatal(err)
	}
	byAutotune := 0
	for _, e := range entries {
		if e.Actor == "autotune" && e.Action == "queue.autotune" {
			byAutotune++
		}
	}
	if byAutotune < 2 {
		t.Fatalf("audit: %d changes by autotune, want every change recorded (at least 2): %+v", byAutotune, entries)
	}

	if res, b := do(t, "PUT", path, `{"autotune":{"enabled":false}}`, auth); res.StatusCode != 200 {
		t.Fatalf("PUT: %d %s", res.StatusCode, b)
	}
	for range 5 {
		report(900)
		time.Sleep(150 * time.Millisecond)
	}
	if f := get(); f.AdmitPerSecondNow != 40 {
		t.Fatalf("after switching autotune off: %+v, want the last rate (40) kept", f)
	}
}
