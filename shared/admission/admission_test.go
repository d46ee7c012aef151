package admission

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/shared/token"
)

func newRedis(t *testing.T) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("redis: %v", err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func testShow(t *testing.T, rdb *redis.Client) string {
	id := fmt.Sprintf("t%d", rand.Int64())
	t.Cleanup(func() {
		ctx := context.Background()
		rdb.Del(ctx, rediskey.QueueConfig(id), rediskey.QueueActive(id), rediskey.QueueRevoked(id))
	})
	return id
}

func TestGate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := newRedis(t)
	show := testShow(t, rdb)
	key, _ := token.GenerateKey()
	is := token.NewIssuer(key)
	gate := NewGate(rdb, token.NewStaticKeys(key.Public()), 0)

	if c, err := gate.Check(ctx, show, "u1", ""); err != nil || c != nil {
		t.Fatalf("queue off: got %v, %v; want pass", c, err)
	}
	s := DefaultSettings()
	s.Enabled = true
	if err := SaveSettings(ctx, rdb, show, s); err != nil {
		t.Fatal(err)
	}
	gate.Forget(show)
	raw, exp, _ := is.Issue("u1", show, "jti-1", time.Now(), time.Minute)
	other, _, _ := is.Issue("u1", "another", "jti-2", time.Now(), time.Minute)
	tests := []struct {
		name, user, raw string
		want            error
	}{
		{"no token", "u1", "", ErrRequired},
		{"wrong user", "u2", raw, token.ErrWrongUser},
		{"wrong show", "u1", other, token.ErrWrongShow},
		{"junk", "u1", "junk", token.ErrInvalid},
	}
	for _, tc := range tests {
		if _, err := gate.Check(ctx, show, tc.user, tc.raw); !errors.Is(err, tc.want) || !errors.Is(err, ErrRequired) {
			t.Errorf("%s: got %v, want %v wrapped in ErrRequired", tc.name, err, tc.want)
		}
	}
	c, err := gate.Check(ctx, show, "u1", raw)
	if err != nil || c.ID != "jti-1" {
		t.Fatalf("valid token: got %v, %v", c, err)
	}
	rdb.ZAdd(ctx, rediskey.QueueActive(show), redis.Z{Score: float64(exp.UnixMilli()), Member: "jti-1"})
	if err := Release(ctx, rdb, show, "jti-1", exp); err != nil {
		t.Fatal(err)
	}
	if n := rdb.ZCard(ctx, rediskey.QueueActive(show)).Val(); n != 0 {
		t.Fatalf("active after release = %d, want 0", n)
	}
	if _, err := gate.Check(ctx, show, "u1", raw); !errors.Is(err, token.ErrRevoked) {
		t.Fatalf("revoked: got %v", err)
	}
}

func TestSettingsRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := newRedis(t)
	show := testShow(t, rdb)
	got, err := LoadSettings(ctx, rdb, show)
	if err != nil || got != DefaultSettings() {
		t.Fatalf("defaults: got %+v, %v", got, err)
	}
	want := Settings{Enabled: true, AdmitPerSecond: 2.5, MaxActive: 7, TokenTTLSeconds: 60}
	if err := SaveSettings(ctx, rdb, show, want); err != nil {
		t.Fatal(err)
	}
	if got, _ = LoadSettings(ctx, rdb, show); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if err := (Settings{AdmitPerSecond: 0, MaxActive: 1, TokenTTLSeconds: 60}).Validate(); err == nil {
		t.Fatal("zero rate accepted")
	}
}
