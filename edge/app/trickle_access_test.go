package app

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/infra/storetest"
	"github.com/flashseat/flashseat/waitroom"
	wrpostgres "github.com/flashseat/flashseat/waitroom/postgres"
)

// TestStoreDownTrickleKeepsAccess: a show for invited fans whose Redis dies keeps trickling fans in, but only the
// invited ones: the trickle reads who was invited from PostgreSQL, since the copy in Redis is gone with it.
func TestStoreDownTrickleKeepsAccess(t *testing.T) {
	t.Parallel()
	rds := storetest.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: rds.Addr})
	t.Cleanup(func() { rdb.Close() })
	const adminToken = "adm_edge_trickle_access_0123"
	pool, dbURL := pgtest.NewWithURL(t)
	edge := startEdge(t, map[string]string{"REDIS_URL": rds.URL, "ADMIN_TOKEN": adminToken, "QUEUE_TICK": "50ms",
		"DATABASE_URL": dbURL})
	show := newShow(t, rdb)
	onSale(t, rdb, show)
	body := `{"enabled":true,"admitPerSecond":0.001,"maxActive":1000,"tokenTtlSeconds":600,"access":"invited",
		"botProtection":{"enabled":false},"whenStoreDown":{"policy":"trickle","admitPerSecond":50}}`
	admin := map[string]string{"Authorization": "Bearer " + adminToken, "Content-Type": "application/json"}
	if res, b := do(t, "PUT", edge+"/admin/v1/shows/"+show+"/queue", body, admin); res.StatusCode != 200 {
		t.Fatalf("queue: %d %s", res.StatusCode, b)
	}
	rec := wrpostgres.New(pool)
	ctx := context.Background()
	for _, u := range []string{"invited", "left-out"} {
		seed, _ := waitroom.NewSeed()
		if _, _, err := rec.Register(ctx, show, u, waitroom.FanHash(show, u), seed); err != nil {
			t.Fatal(err)
		}
	}
	next, _ := waitroom.NewSeed()
	// A wave of one that draws "invited": the draw is the record's, its choice given here.
	if _, _, err := rec.DrawWave(ctx, show, waitroom.WaveRequest{Count: 1}, next, func(_ string, el []waitroom.Eligible) ([]int, error) {
		for i, e := range el {
			if e.User == "invited" {
				return []int{i}, nil
			}
		}
		t.Fatal("the invited fan is not eligible")
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	join := func(user string) (int, string, string) {
		res, b := do(t, "POST", edge+"/queue/"+show+"/join", "", map[string]string{"Authorization": "Bearer " + userToken(t, user)})
		var out struct{ Status, Reason string }
		_ = json.Unmarshal(b, &out)
		return res.StatusCode, out.Status, out.Reason
	}

	rds.Kill()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if s, st, _ := join("invited"); s == 200 && st == "admitted" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the trickle never admitted the invited fan with Redis down")
		}
	}
	for _, u := range []string{"left-out", "stranger"} {
		if s, _, reason := join(u); s != 403 || reason != waitroom.ReasonInvitationRequired {
			t.Errorf("%s with Redis down: %d %q, want 403 invitation-required", u, s, reason)
		}
	}
}
