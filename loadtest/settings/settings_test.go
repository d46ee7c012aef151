// Package settings tests that a show's waiting-room settings, changed through the operator API on one edge
// replica, reach every edge and booking replica within a second, and that they survive the loss of Redis: they
// are recorded in PostgreSQL and every replica serves them again once the keys, or the whole Redis, are gone.
package settings

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/crowd"
	"github.com/flashseat/flashseat/loadtest/platformtest"
	"github.com/flashseat/flashseat/shared/infra/driver"
	"github.com/flashseat/flashseat/shared/infra/redistest"
	"github.com/flashseat/flashseat/shared/infra/storetest"
)

// view is the part of GET /admin/v1/shows/{id}/queue this test changes and compares.
type view struct {
	Mode                       string  `json:"mode"`
	ActiveUsersThreshold       int     `json:"activeUsersThreshold"`
	NewUsersPerMinuteThreshold int     `json:"newUsersPerMinuteThreshold"`
	CooldownSeconds            int     `json:"cooldownSeconds"`
	AdmitPerSecond             float64 `json:"admitPerSecond"`
	MaxActive                  int     `json:"maxActive"`
}

// TestSettingsReachEveryReplicaAndSurviveRedisLoss runs two edge and two booking replicas on a Redis of the
// test's own. It changes a show's mode, thresholds and rate through one edge replica, and fails unless both edges
// answer the new settings, and both booking replicas gate the show accordingly (its queueEnabled, read from each
// replica directly), within a second. Then Redis loses the show's keys, and after that Redis itself is killed and
// started again empty: each time every replica must serve the same settings again, brought back from PostgreSQL,
// not the defaults.
func TestSettingsReachEveryReplicaAndSurviveRedisLoss(t *testing.T) {
	rd := storetest.StartRedis(t)
	p := platformtest.Start(t, platformtest.Options{Edges: 2, Bookings: 2, RedisURL: rd.URL})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := client.New(p.BaseURL, client.NewTransport(8), client.Options{AdminToken: p.AdminToken, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sc := loadtest.Presets["smoke"]
	sc.Seats, sc.SaleDelay = 20, 0
	show, _, err := crowd.Setup(ctx, c, sc, strconv.FormatInt(time.Now().UnixNano(), 36))
	if err != nil {
		t.Fatal(err)
	}
	everywhere := func(want view, limit time.Duration, what string) {
		t.Helper()
		at := time.Now()
		for _, edge := range p.EdgeURLs {
			until(ctx, t, p, edge, show, want, limit)
		}
		for _, booking := range p.BookingURLs {
			gated(ctx, t, booking, show, want.Mode != "off", limit-time.Since(at))
		}
		t.Logf("%s: every edge and booking replica served it %s after", what, time.Since(at).Round(time.Millisecond))
	}
	for i, want := range []view{
		{Mode: "threshold", ActiveUsersThreshold: 37, NewUsersPerMinuteThreshold: 411, CooldownSeconds: 7, AdmitPerSecond: 13, MaxActive: 40},
		{Mode: "off", ActiveUsersThreshold: 37, NewUsersPerMinuteThreshold: 411, CooldownSeconds: 7, AdmitPerSecond: 13, MaxActive: 40},
		{Mode: "always", ActiveUsersThreshold: 52, NewUsersPerMinuteThreshold: 0, CooldownSeconds: 3, AdmitPerSecond: 4.5, MaxActive: 9},
	} {
		// Both replicas have the show's settings cached before each change: the change must reach them, not a
		// first read.
		for _, booking := range p.BookingURLs {
			queueEnabled(ctx, booking, show)
		}
		put(ctx, t, p, p.EdgeURLs[i%2], show, want)
		everywhere(want, time.Second, fmt.Sprintf("change %d (%s, through edge %d)", i+1, want.Mode, i%2+1))
	}
	want := view{Mode: "threshold", ActiveUsersThreshold: 61, NewUsersPerMinuteThreshold: 250, CooldownSeconds: 11, AdmitPerSecond: 21, MaxActive: 70}
	put(ctx, t, p, p.EdgeURLs[1], show, want)
	everywhere(want, time.Second, "the last change")

	rdb, err := driver.OpenRedis(p.RedisURL, p.RedisClusterAddrs, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if err := redistest.DeleteShow(ctx, rdb, show); err != nil {
		t.Fatal(err)
	}
	everywhere(want, 5*time.Second, "after the show's Redis keys were deleted")

	rd.Kill()
	rd.Start()
	everywhere(want, 15*time.Second, "after Redis was killed and started again empty")
}

// gated polls booking replica base every 20 ms until its show detail says the queue is on (want) or off, and
// fails the test unless it does within limit.
func gated(ctx context.Context, t *testing.T, base, show string, want bool, limit time.Duration) {
	t.Helper()
	start := time.Now()
	var got bool
	var last error
	for time.Since(start) < limit {
		if got, last = queueEnabled(ctx, base, show); last == nil && got == want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("booking %s: queueEnabled %v (%v) after %s, want %v", base, got, last, limit, want)
}

// queueEnabled is what booking replica base says of the show's queue, from its own gate.
func queueEnabled(ctx context.Context, base, show string) (bool, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/shows/"+show, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return false, fmt.Errorf("GET: %s", res.Status)
	}
	var v struct {
		QueueEnabled bool `json:"queueEnabled"`
	}
	return v.QueueEnabled, json.NewDecoder(res.Body).Decode(&v)
}

// put sets the show's settings through the edge at base.
func put(ctx context.Context, t *testing.T, p *platformtest.Platform, base, show string, v view) {
	t.Helper()
	b, _ := json.Marshal(v)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, base+"/admin/v1/shows/"+show+"/queue", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+p.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("PUT queue settings through %s: %s", base, res.Status)
	}
}

// until polls the edge at base every 20 ms until it answers settings want for the show, and fails the test
// unless it does within limit; it returns how long that took.
func until(ctx context.Context, t *testing.T, p *platformtest.Platform, base, show string, want view, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var got view
	var last error
	for time.Since(start) < limit {
		got, last = read(ctx, p, base, show)
		if last == nil && got == want {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s answers %+v (%v) after %s, want %+v", base, got, last, limit, want)
	return 0
}

func read(ctx context.Context, p *platformtest.Platform, base, show string) (view, error) {
	var v view
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/admin/v1/shows/"+show+"/queue", nil)
	req.Header.Set("Authorization", "Bearer "+p.AdminToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return v, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return v, fmt.Errorf("GET: %s", res.Status)
	}
	return v, json.NewDecoder(res.Body).Decode(&v)
}
