package admission_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/admission/admissiontest"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/token"
)

// roundTrips counts the round trips a Redis client makes (a pipeline is one), by the commands they carry, and
// slows those that carry a command in slow by delay, as a starved process or a busy network would: long enough
// for concurrent callers to meet the round trip in flight.
type roundTrips struct {
	slow  string // a command name, lower case ("hmget", "zmscore"); empty: none
	delay time.Duration
	began chan struct{} // receives (without blocking) when a slowed round trip begins

	mu    sync.Mutex
	trips [][]string // each round trip's commands' names
	ids   [][]string // each ZMSCORE's token ids
}

func countRoundTrips(rdb redis.UniversalClient, slow string, delay time.Duration) *roundTrips {
	rt := &roundTrips{slow: slow, delay: delay, began: make(chan struct{}, 1)}
	rdb.AddHook(rt)
	return rt
}

func (rt *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (rt *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		rt.trip([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}

func (rt *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		rt.trip(cmds)
		return next(ctx, cmds)
	}
}

func (rt *roundTrips) trip(cmds []redis.Cmder) {
	var names []string
	rt.mu.Lock()
	for _, c := range cmds {
		name := strings.ToLower(c.Name())
		names = append(names, name)
		if name == "zmscore" {
			var ids []string
			for _, a := range c.Args()[2:] {
				ids = append(ids, fmt.Sprint(a))
			}
			rt.ids = append(rt.ids, ids)
		}
	}
	rt.trips = append(rt.trips, names)
	rt.mu.Unlock()
	if rt.slow != "" && slices.Contains(names, rt.slow) {
		select {
		case rt.began <- struct{}{}:
		default:
		}
		time.Sleep(rt.delay)
	}
}

// with is how many round trips carried the command name since the last reset.
func (rt *roundTrips) with(name string) int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	n := 0
	for _, t := range rt.trips {
		if slices.Contains(t, name) {
			n++
		}
	}
	return n
}

// batches is the token ids of each revocation round trip since the last reset.
func (rt *roundTrips) batches() [][]string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return slices.Clone(rt.ids)
}

func (rt *roundTrips) reset() {
	rt.mu.Lock()
	rt.trips, rt.ids = nil, nil
	rt.mu.Unlock()
}

// gated is a show whose queue is on, a gate over it whose Redis round trips are counted, and an issuer of its
// admission tokens.
type gated struct {
	show   string
	gate   *admission.Gate
	keeper *admission.Keeper
	is     *token.Issuer
	rt     *roundTrips
}

func newGated(t testing.TB, slow string, delay time.Duration) *gated {
	t.Helper()
	rdb := newRedis(t)
	k := admissiontest.Keeper(t, pgtest.New(t), rdb)
	show := admissiontest.Show(t, rdb, "adm-")
	key, _ := token.GenerateKey()
	g := &gated{show: show, keeper: k, is: token.NewIssuer(key),
		gate: admission.NewGate(k, token.NewStaticKeys(key.Public()), 0)}
	switchOn(t, k, show, false)
	g.rt = countRoundTrips(rdb, slow, delay)
	return g
}

// admit issues a token of the show for user under jti, recorded as granted; revoked tokens are then released.
func (g *gated) admit(t testing.TB, user, jti string, revoked bool) string {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	raw, exp, err := g.is.Issue(user, g.show, jti, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.keeper.AddGrants(ctx, []admission.Grant{{ShowID: g.show, JTI: jti, UserID: user, IssuedAt: now, ExpiresAt: exp}}); err != nil {
		t.Fatal(err)
	}
	if revoked {
		if err := g.gate.Release(ctx, g.show, user, jti, exp); err != nil {
			t.Fatal(err)
		}
	}
	return raw
}

// crowd admits n fans (user "u<i>", token id "jti-<i>", revoked where revoked says) and reads the show's settings,
// so that what is counted next is the checks' own round trips. It returns their tokens.
func (g *gated) crowd(t testing.TB, n int, revoked func(i int) bool) []string {
	t.Helper()
	raws := make([]string, n)
	for i := range n {
		raws[i] = g.admit(t, fmt.Sprint("u", i), fmt.Sprint("jti-", i), revoked(i))
	}
	if _, err := g.gate.Settings(context.Background(), g.show); err != nil {
		t.Fatal(err)
	}
	g.rt.reset()
	return raws
}

// TestSettingsOneReadPerShow: the requests that find a show's settings stale together share one Redis read,
// where each used to make its own (a herd on the show's key once a second).
func TestSettingsOneReadPerShow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := newGated(t, "hmget", 100*time.Millisecond)
	if s, err := g.gate.Settings(ctx, g.show); err != nil || !s.Enabled {
		t.Fatalf("settings: %+v %v", s, err)
	}
	time.Sleep(1100 * time.Millisecond) // the one-second entry goes stale
	g.rt.reset()
	const n = 50
	start := make(chan struct{})
	errs := make(chan error, n)
	for range n {
		go func() {
			<-start
			s, err := g.gate.Settings(ctx, g.show)
			if err == nil && !s.Enabled {
				err = errors.New("queue read as off")
			}
			errs <- err
		}()
	}
	close(start)
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if got := g.rt.with("hmget"); got != 1 {
		t.Fatalf("%d concurrent callers on a stale show made %d settings reads, want 1", n, got)
	}
}

// TestSettingsCallerGivesUp: a caller whose context ends while the shared read is in flight gets ErrUnavailable
// (never "queue off"); the read goes on for the others, even when it was that caller who started it.
func TestSettingsCallerGivesUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := newGated(t, "hmget", 300*time.Millisecond)
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	leader := make(chan error, 1)
	go func() {
		_, err := g.gate.Settings(short, g.show)
		leader <- err
	}()
	<-g.rt.began
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			s, err := g.gate.Settings(ctx, g.show)
			if err == nil && !s.Enabled {
				err = errors.New("queue read as off")
			}
			errs <- err
		}()
	}
	if err := <-leader; !errors.Is(err, admission.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("caller out of time: got %v, want ErrUnavailable for its deadline", err)
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("a caller sharing the read: %v", err)
		}
	}
	if got := g.rt.with("hmget"); got != 1 {
		t.Fatalf("%d settings reads, want 1", got)
	}
	// Forget: the next caller reads anew.
	g.gate.Forget(g.show)
	if _, err := g.gate.Settings(ctx, g.show); err != nil || g.rt.with("hmget") != 2 {
		t.Fatalf("after Forget: %v, %d reads, want a second", err, g.rt.with("hmget"))
	}
}

// TestChecksShareRevocationReads: concurrent checks on a show share round trips for their revocation lookups, and
// each is answered for its own token, revoked and live ones in one batch.
func TestChecksShareRevocationReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := newGated(t, "zmscore", 50*time.Millisecond)
	const n = 64
	raws := g.crowd(t, n, func(i int) bool { return i%3 == 0 })
	start := make(chan struct{})
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = g.gate.Check(ctx, g.show, fmt.Sprint("u", i), raws[i])
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if i%3 == 0 && !errors.Is(err, token.ErrRevoked) {
			t.Errorf("revoked jti-%d: got %v, want ErrRevoked", i, err)
		}
		if i%3 != 0 && err != nil {
			t.Errorf("live jti-%d: got %v, want pass", i, err)
		}
	}
	trips := g.rt.with("zmscore")
	if trips >= n {
		t.Fatalf("%d checks made %d revocation round trips, want fewer", n, trips)
	}
	mixed := false
	for _, ids := range g.rt.batches() {
		var revoked, live bool
		for _, id := range ids {
			var i int
			fmt.Sscanf(id, "jti-%d", &i)
			revoked, live = revoked || i%3 == 0, live || i%3 != 0
		}
		mixed = mixed || (revoked && live)
	}
	if !mixed {
		t.Fatalf("no round trip carried both revoked and live ids: %v", g.rt.batches())
	}
	t.Logf("%d checks, %d revocation round trips", n, trips)
}

// TestRevokedBeforeCheckRefused: a revocation that completed before a check began is always seen, however busy
// the show's revocation reads are: a check never takes an answer from a round trip sent before it began.
func TestRevokedBeforeCheckRefused(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := newGated(t, "zmscore", time.Millisecond)
	live := g.admit(t, "busy", "busy", false)
	var wg sync.WaitGroup
	var busy atomic.Int64
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if _, err := g.gate.Check(ctx, g.show, "busy", live); err != nil && ctx.Err() == nil {
					t.Errorf("live token: %v", err)
					return
				}
				busy.Add(1)
			}
		}()
	}
	for i := range 200 {
		user, jti := fmt.Sprint("k", i), fmt.Sprint("kicked-", i)
		raw := g.admit(t, user, jti, false)
		// Passed once, so an answer kept from before the revocation would pass it again.
		c, err := g.gate.Check(ctx, g.show, user, raw)
		if err != nil {
			t.Fatalf("check %d before its revocation: %v", i, err)
		}
		if err := g.gate.Release(ctx, g.show, user, jti, c.ExpiresAt.Time); err != nil {
			t.Fatal(err)
		}
		if _, err := g.gate.Check(ctx, g.show, user, raw); !errors.Is(err, token.ErrRevoked) {
			t.Fatalf("check %d after its revocation: got %v, want ErrRevoked", i, err)
		}
	}
	cancel()
	wg.Wait()
	t.Logf("%d concurrent checks of a live token meanwhile", busy.Load())
}

// TestCheckCallerGivesUp: a check whose context ends while it waits for a revocation round trip gets
// ErrUnavailable; the checks sharing that round trip, or the one it started, still get their answers.
func TestCheckCallerGivesUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := newGated(t, "zmscore", 200*time.Millisecond)
	const n = 8
	raws := g.crowd(t, n, func(i int) bool { return i == 1 })
	check := func(ctx context.Context, i int, out chan<- error) {
		_, err := g.gate.Check(ctx, g.show, fmt.Sprint("u", i), raws[i])
		out <- err
	}
	// Check 0 starts the first round trip and gives up during it; check 2 gives up waiting for the next one,
	// which the others share.
	early := make(chan error, 2)
	short0, cancel0 := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel0()
	go check(short0, 0, early)
	<-g.rt.began
	short2, cancel2 := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel2()
	go check(short2, 2, early)
	rest := make([]chan error, n)
	for i := range n {
		if i == 0 || i == 2 {
			continue
		}
		rest[i] = make(chan error, 1)
		go check(ctx, i, rest[i])
	}
	for range 2 {
		if err := <-early; !errors.Is(err, admission.ErrUnavailable) || errors.Is(err, admission.ErrRequired) {
			t.Errorf("check out of time: got %v, want ErrUnavailable", err)
		}
	}
	for i, ch := range rest {
		if ch == nil {
			continue
		}
		err := <-ch
		switch {
		case i == 1 && !errors.Is(err, token.ErrRevoked):
			t.Errorf("revoked jti-1: got %v, want ErrRevoked", err)
		case i != 1 && err != nil:
			t.Errorf("jti-%d: got %v, want pass", i, err)
		}
	}
	if got := g.rt.with("zmscore"); got != 2 {
		t.Errorf("%d revocation round trips, want 2 (the first check's, then everyone else's)", got)
	}
}
