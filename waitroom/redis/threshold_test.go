package redis_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/admission/admissiontest"
	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
	wrredis "github.com/flashseat/flashseat/waitroom/redis"
)

// configureThreshold puts the show's queue in threshold mode with the given limits.
func configureThreshold(t testing.TB, rdb goredis.UniversalClient, show string, active, perMinute, cooldown int) {
	t.Helper()
	k := admissiontest.Keeper(t, database(t), rdb)
	if _, _, err := k.Update(context.Background(), show, func(admission.Settings) (admission.Settings, error) {
		s := admission.Settings{Mode: admission.ModeThreshold, Enabled: true, AdmitPerSecond: 1000, MaxActive: 1000,
			TokenTTLSeconds: 600, Tuning: admission.DefaultTuning()}
		s.ActiveUsersThreshold, s.NewUsersPerMinuteThreshold, s.CooldownSeconds = active, perMinute, cooldown
		return s, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// joinAll joins n fans at once and returns the places by status.
func joinAll(t *testing.T, svc *waitroom.Service, show, prefix string, n int) (admitted []waitroom.Place, waiting int) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p, err := svc.Join(context.Background(), show, fmt.Sprintf("%s%d", prefix, i))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Error(err)
			case p.Status == waitroom.Admitted && p.Grant != nil && p.Grant.Token != "":
				admitted = append(admitted, p)
			case p.Status == waitroom.Waiting && p.Seq > 0:
				waiting++
			default:
				t.Errorf("join: got %+v", p)
			}
		})
	}
	wg.Wait()
	return admitted, waiting
}

// TestThresholdActiveUsers: under the threshold fans are admitted at once (a signed token, no ticket); the join
// that finds it reached engages the queue, and from then on fans wait, however many join at once; while engaged
// the ticks admit only up to the threshold; once the line is empty and the figures stayed under for the cooldown,
// the queue disengages and fans are admitted at once again.
func TestThresholdActiveUsers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t)
	show := newShow(t, rdb)
	const limit = 5
	configureThreshold(t, rdb, show, limit, 0, 1)
	svc := newService(t, rdb, issuer(t), waitroom.Options{})
	keeper := admissiontest.Keeper(t, database(t), rdb)

	admitted, waiting := joinAll(t, svc, show, "a", 40)
	if len(admitted) != limit || waiting != 40-limit {
		t.Fatalf("40 fans at once: admitted %d, waiting %d; want %d at once and the rest in line", len(admitted), waiting, limit)
	}
	_, c, err := svc.Settings(ctx, show)
	if err != nil || !c.Engaged || c.ActiveUsers != limit || c.ArrivalsPerMinute != 40 {
		t.Fatalf("figures: got %+v, %v; want engaged, %d active, 40 arrivals", c, err, limit)
	}
	release := func(ps []waitroom.Place) {
		t.Helper()
		for _, p := range ps {
			if err := keeper.Release(ctx, admission.Grant{ShowID: show, UserID: p.Grant.UserID, JTI: p.Grant.JTI,
				ExpiresAt: p.Grant.ExpiresAt}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Engaged, the ticks admit only as slots under the threshold free up, however high maxActive and the rate.
	snap, err := svc.Tick(ctx, show, false)
	if err != nil || len(snap.Grants) != 0 || !snap.Engaged || snap.MaxActive != limit {
		t.Fatalf("tick at the threshold: %d grants, engaged %t, max %d, %v", len(snap.Grants), snap.Engaged, snap.MaxActive, err)
	}
	release(admitted[:2])
	time.Sleep(5 * time.Millisecond)
	if snap, err = svc.Tick(ctx, show, false); err != nil || len(snap.Grants) != 2 || snap.Active != limit {
		t.Fatalf("after two releases: %d grants, %d active, %v; want 2 and %d", len(snap.Grants), snap.Active, err, limit)
	}
	// Every fan is served and leaves: the line empties, the queue stays engaged through the cooldown, then not.
	live := admitted[2:]
	for _, g := range snap.Grants {
		live = append(live, waitroom.Place{Grant: &waitroom.Grant{UserID: g.UserID, JTI: g.JTI, ExpiresAt: g.ExpiresAt}})
	}
	for range 20 {
		release(live)
		live = nil
		time.Sleep(5 * time.Millisecond)
		if snap, err = svc.Tick(ctx, show, false); err != nil {
			t.Fatal(err)
		}
		for _, g := range snap.Grants {
			live = append(live, waitroom.Place{Grant: &waitroom.Grant{UserID: g.UserID, JTI: g.JTI, ExpiresAt: g.ExpiresAt}})
		}
		if snap.Waiting == 0 && len(live) == 0 {
			break
		}
	}
	if snap.Waiting != 0 || !snap.Engaged {
		t.Fatalf("line served: waiting %d, engaged %t; want an empty line, still engaged (cooldown)", snap.Waiting, snap.Engaged)
	}
	if p, err := svc.Join(ctx, show, "during-cooldown"); err != nil || p.Status != waitroom.Waiting {
		t.Fatalf("a join in the cooldown: got %+v, %v; want a place in line", p, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for snap.Engaged && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		if snap, err = svc.Tick(ctx, show, false); err != nil {
			t.Fatal(err)
		}
		for _, g := range snap.Grants {
			release([]waitroom.Place{{Grant: &waitroom.Grant{UserID: g.UserID, JTI: g.JTI, ExpiresAt: g.ExpiresAt}}})
		}
	}
	if snap.Engaged {
		t.Fatal("the queue did not disengage after its cooldown")
	}
	if p, err := svc.Join(ctx, show, "after"); err != nil || p.Status != waitroom.Admitted {
		t.Fatalf("a join after disengaging: got %+v, %v; want admitted at once", p, err)
	}
}

// TestThresholdArrivals: the arrivals over the last minute engage the queue too.
func TestThresholdArrivals(t *testing.T) {
	t.Parallel()
	rdb := client(t)
	show := newShow(t, rdb)
	configureThreshold(t, rdb, show, 1000, 3, 60)
	svc := newService(t, rdb, issuer(t), waitroom.Options{})
	admitted, waiting := joinAll(t, svc, show, "n", 10)
	if len(admitted) != 3 || waiting != 7 {
		t.Fatalf("10 fans, 3 arrivals a minute: admitted %d, waiting %d", len(admitted), waiting)
	}
}

// TestThresholdBeforeOpening: a show whose sale has not opened queues everyone (the pre-opening draw).
func TestThresholdBeforeOpening(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t)
	show := newShow(t, rdb)
	showInfo(t, rdb, show, map[string]any{rediskey.InfoSaleStartsAt: time.Now().Add(time.Hour).UnixMilli()})
	configureThreshold(t, rdb, show, 1000, 0, 60)
	svc := newService(t, rdb, issuer(t), waitroom.Options{})
	p, err := svc.Join(ctx, show, "early")
	if err != nil || p.Status != waitroom.Waiting || p.OpensAt.IsZero() {
		t.Fatalf("before opening: got %+v, %v; want a place in the pre-opening pool", p, err)
	}
}

// TestArrivalsRing: the ring forgets what is over a minute old, whichever seconds passed with no arrival, and a
// count alone (a lookup, a tick) changes nothing. The ring is written as a join 30 s after its last arrival finds
// it: 4 arrivals 80 s ago, 6 40 s ago.
func TestArrivalsRing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t)
	show := newShow(t, rdb)
	configureThreshold(t, rdb, show, 1000, 0, 60)
	svc := newService(t, rdb, issuer(t), waitroom.Options{})
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	sec := now.Unix()
	bucket := func(s int64) string { return fmt.Sprintf("a:%d", s%60) }
	if err := rdb.HSet(ctx, wrredis.BotStats(show), "a:last", sec-30, "a:total", 10,
		bucket(sec-80), 4, bucket(sec-40), 6).Err(); err != nil {
		t.Fatal(err)
	}
	count := func() int64 {
		_, c, err := svc.Settings(ctx, show)
		if err != nil {
			t.Fatal(err)
		}
		return c.ArrivalsPerMinute
	}
	if n := count(); n != 6 {
		t.Fatalf("before the join: %d arrivals in the last minute, want 6", n)
	}
	if p, err := svc.Join(ctx, show, "fan"); err != nil || p.Status != waitroom.Admitted {
		t.Fatalf("join: %+v %v", p, err)
	}
	if n := count(); n != 7 {
		t.Fatalf("after the join: %d arrivals in the last minute, want 7", n)
	}
	total, err := rdb.HGet(ctx, wrredis.BotStats(show), "a:total").Int64()
	if err != nil || total != 7 {
		t.Fatalf("the ring's total: %d %v, want 7 (the minute-old 4 taken out)", total, err)
	}
}
