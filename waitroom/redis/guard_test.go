package redis_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/infra/storetest"
	"github.com/flashseat/flashseat/shared/pow"
	"github.com/flashseat/flashseat/waitroom"
	wrredis "github.com/flashseat/flashseat/waitroom/redis"
)

// pressureLost is the real store, except that while lost is set its guard counts are read from a Redis that does
// not answer: a failover that begins between a join's script (which refused the fan for want of a proof) and the
// read of the challenge's difficulty.
type pressureLost struct {
	*wrredis.Store
	dead *wrredis.Store
	lost atomic.Bool
}

func (p *pressureLost) Pressure(ctx context.Context, show, prefix string, halfLife time.Duration) (float64, float64, error) {
	if p.lost.Load() {
		return p.dead.Pressure(ctx, show, prefix, halfLife)
	}
	return p.Store.Pressure(ctx, show, prefix, halfLife)
}

// TestRefusalWithoutAChallengeIsUnavailable: a join refused for want of a proof carries a fresh challenge; when
// that challenge cannot be made because the store stopped answering, the join fails as unavailable (a 503 that
// tells the fan to retry) rather than a refusal that asks for a proof and gives the fan nothing to solve. Once the
// store answers again, the fan solves the first challenge and takes a place.
func TestRefusalWithoutAChallengeIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t)
	show := newShow(t, rdb)
	bots := admission.DefaultBotProtection()
	bots.BaseDifficulty, bots.MaxDifficulty = 10, 10
	st := configureBots(t, rdb, show, bots)
	pw, err := pow.NewIssuer([]byte("refusal-without-a-challenge-secret"))
	if err != nil {
		t.Fatal(err)
	}
	down := goredis.NewClient(&goredis.Options{Addr: storetest.DeadAddr(t), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = down.Close() })
	store := &pressureLost{Store: wrredis.New(rdb), dead: wrredis.New(down)}
	svc := newServiceOn(t, store, rdb, issuer(t), waitroom.Options{PoW: pw, Settings: fixedSettings{st}})
	r := waitroom.JoinRequest{Show: show, User: "fan-1", Client: waitroom.Client{Prefix: "10.1.2.3"}}

	_, err = svc.Enter(ctx, r)
	var ref *waitroom.Refusal
	if !errors.As(err, &ref) || !errors.Is(err, waitroom.ErrProofRequired) || ref.Challenge == nil {
		t.Fatalf("a join without a proof: %v (%+v), want a refusal carrying a challenge", err, ref)
	}
	first := *ref.Challenge

	store.lost.Store(true)
	_, err = svc.Enter(ctx, r)
	if !errors.Is(err, waitroom.ErrUnavailable) || errors.As(err, &ref) && ref.Challenge == nil {
		t.Fatalf("a join refused while the challenge cannot be made: %v, want unavailable", err)
	}

	store.lost.Store(false)
	n, ok := pow.Solve(first, 1, nil)
	if !ok {
		t.Fatal("the challenge has no solution")
	}
	r.Proof = pow.Encode(first, n, time.Millisecond)
	p, err := svc.Enter(ctx, r)
	if err != nil || p.Status != waitroom.Waiting || p.Position != 1 {
		t.Fatalf("the fan's solved join: %+v, %v; want first in line", p, err)
	}
}
