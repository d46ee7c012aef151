package redis_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashseat/flashseat/waitroom"
	wrredis "github.com/flashseat/flashseat/waitroom/redis"
)

// countingStore counts the store calls a replica makes.
type countingStore struct {
	waitroom.Store
	calls atomic.Int64
}

func (c *countingStore) Admit(ctx context.Context, show, nonce string, grace time.Duration, maxScan int) (waitroom.Snapshot, error) {
	c.calls.Add(1)
	return c.Store.Admit(ctx, show, nonce, grace, maxScan)
}

func (c *countingStore) Grants(ctx context.Context, show string, users []string) (map[string]waitroom.Grant, error) {
	c.calls.Add(1)
	return c.Store.Grants(ctx, show, users)
}

func (c *countingStore) Seqs(ctx context.Context, show string, users []string) (map[string]int64, error) {
	c.calls.Add(1)
	return c.Store.Seqs(ctx, show, users)
}

func (c *countingStore) Join(ctx context.Context, show, user string, receipted int64) (waitroom.Entry, error) {
	c.calls.Add(1)
	return c.Store.Join(ctx, show, user, receipted)
}

func (c *countingStore) Lookup(ctx context.Context, show, user string) (waitroom.Entry, error) {
	c.calls.Add(1)
	return c.Store.Lookup(ctx, show, user)
}

func (c *countingStore) SaveTokens(ctx context.Context, show string, grants []waitroom.Grant) (int64, error) {
	c.calls.Add(1)
	return c.Store.SaveTokens(ctx, show, grants)
}

// TestFanOutCostsOneReadPerTick: with hundreds of local streams, each tick costs this replica the admission
// script (one Redis call) plus storing the tokens it signed, however many streams there are, and every stream's
// position still follows the queue.
func TestFanOutCostsOneReadPerTick(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t)
	show := newShow(t, rdb)
	configure(t, rdb, show, 20, 10000, 600)
	store := &countingStore{Store: wrredis.New(rdb)}
	svc := newServiceOn(t, store, rdb, issuer(t), waitroom.Options{})
	const fans = 300
	watchers := make([]*waitroom.Watcher, fans)
	for i := range fans {
		w, _, err := svc.Watch(ctx, show, "w"+strconv.Itoa(i), "")
		if err != nil {
			t.Fatal(err)
		}
		defer svc.Unwatch(w)
		watchers[i] = w
	}
	if _, err := svc.Tick(ctx, show, false); err != nil { // starts the tick clock
		t.Fatal(err)
	}
	store.calls.Store(0)
	const ticks = 20
	var admitted, withGrants int64
	for range ticks {
		time.Sleep(100 * time.Millisecond)
		snap, err := svc.Tick(ctx, show, true)
		if err != nil {
			t.Fatal(err)
		}
		admitted += int64(len(snap.Grants))
		if len(snap.Grants) > 0 {
			withGrants++
		}
	}
	if got, want := store.calls.Load(), ticks+withGrants; got != want {
		t.Fatalf("%d store calls for %d ticks (%d of them storing tokens) with %d streams, want %d", got, ticks,
			withGrants, fans, want)
	}
	if admitted == 0 {
		t.Fatal("nobody admitted: the queue did not move")
	}
	// Every stream knows its place from the tick alone: admitted fans hold their token, the rest count down.
	for i, w := range watchers {
		u := w.Current()
		switch {
		case int64(i) < admitted:
			if u.Status != waitroom.Admitted || u.Grant == nil || u.Grant.Token == "" {
				t.Fatalf("fan %d: %+v, want admitted with a token", i, u)
			}
		case u.Position != int64(i)+1-admitted:
			t.Fatalf("fan %d: position %d, want %d", i, u.Position, int64(i)+1-admitted)
		}
	}
}
