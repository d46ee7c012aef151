package admission_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/admission/admissiontest"
	admpostgres "github.com/flashseat/flashseat/shared/admission/postgres"
	admredis "github.com/flashseat/flashseat/shared/admission/redis"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/infra/redistest"
	"github.com/flashseat/flashseat/shared/infra/storetest"
	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/shared/token"
)

func TestMain(m *testing.M) { os.Exit(redistest.RunEach(m)) }

func newRedis(t testing.TB) redis.UniversalClient { return redistest.New(t).Client }

func switchOn(t testing.TB, k *admission.Keeper, show string, paused bool) {
	t.Helper()
	_, _, err := k.Update(context.Background(), show, func(s admission.Settings) (admission.Settings, error) {
		s.Enabled, s.Paused = true, paused
		return s, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// switchOnInRecord switches a show's queue on in the record alone, as when every cache write of the change went
// with a failed master.
func switchOnInRecord(t *testing.T, pool *pgxpool.Pool, show string) {
	t.Helper()
	if _, _, _, err := admpostgres.New(pool).Update(context.Background(), show, func(s admission.Settings) (admission.Settings, error) {
		s.Enabled = true
		return s, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// showExists writes booking's ShowInfo for show, deleted when the test ends.
func showExists(t *testing.T, rdb redis.UniversalClient, show string) {
	t.Helper()
	ctx := context.Background()
	if err := rdb.HSet(ctx, rediskey.ShowInfo(show), rediskey.InfoTotalSeats, 10).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Del(ctx, rediskey.ShowInfo(show)) })
}

func TestGate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := newRedis(t)
	k := admissiontest.Keeper(t, pgtest.New(t), rdb)
	show := admissiontest.Show(t, rdb, "adm-")
	key, _ := token.GenerateKey()
	is := token.NewIssuer(key)
	gate := admission.NewGate(k, token.NewStaticKeys(key.Public()), 0)

	if gate.Open(show) {
		t.Fatal("Open before the settings were read: want false (ask Check)")
	}
	if c, err := gate.Check(ctx, show, "u1", ""); err != nil || c != nil {
		t.Fatalf("queue off: got %v, %v; want pass", c, err)
	}
	if !gate.Open(show) {
		t.Fatal("Open with the queue read as off: want true")
	}
	switchOn(t, k, show, false)
	gate.Forget(show)
	if gate.Open(show) {
		t.Fatal("Open after Forget: want false")
	}
	raw, exp, _ := is.Issue("u1", show, "jti-1", time.Now(), time.Minute)
	other, _, _ := is.Issue("u1", "another", "jti-2", time.Now(), time.Minute)
	expired, _, _ := is.Issue("u1", show, "jti-3", time.Now().Add(-time.Hour), time.Minute)
	tests := []struct {
		name, user, raw string
		want            error
		reason          string
	}{
		{"no token", "u1", "", admission.ErrRequired, "missing"},
		{"wrong user", "u2", raw, token.ErrWrongUser, "wrong_user"},
		{"wrong show", "u1", other, token.ErrWrongShow, "wrong_show"},
		{"junk", "u1", "junk", token.ErrInvalid, "invalid"},
		{"expired", "u1", expired, token.ErrExpired, "expired"},
	}
	for _, tc := range tests {
		_, err := gate.Check(ctx, show, tc.user, tc.raw)
		if !errors.Is(err, tc.want) || !errors.Is(err, admission.ErrRequired) {
			t.Errorf("%s: got %v, want %v wrapped in ErrRequired", tc.name, err, tc.want)
		}
		if r := admission.Reason(err); r != tc.reason {
			t.Errorf("%s: reason %q, want %q", tc.name, r, tc.reason)
		}
	}

	// A gate whose keys are fetched from an issuer that cannot be reached does not know the token is bad: the
	// fan is told to retry (ErrUnavailable, a 503), not sent back to the queue.
	blind := admission.NewGate(k, unreachableKeys{}, 0)
	if _, err := blind.Check(ctx, show, "u1", raw); !errors.Is(err, admission.ErrUnavailable) ||
		errors.Is(err, admission.ErrRequired) {
		t.Fatalf("keys unreachable: got %v, want ErrUnavailable and no refusal", err)
	}
	c, err := gate.Check(ctx, show, "u1", raw)
	if err != nil || c.ID != "jti-1" || gate.Open(show) {
		t.Fatalf("valid token: got %v, %v, Open %v", c, err, gate.Open(show))
	}
	// The token is now among the verified ones; a revocation still refuses it (below), as it must on every use.
	rdb.ZAdd(ctx, rediskey.QueueActive(show), redis.Z{Score: float64(exp.UnixMilli()), Member: "jti-1"})
	if err := gate.Release(ctx, show, "u1", "jti-1", exp); err != nil {
		t.Fatal(err)
	}
	if n := rdb.ZCard(ctx, rediskey.QueueActive(show)).Val(); n != 0 {
		t.Fatalf("active after release = %d, want 0", n)
	}
	if _, err := gate.Check(ctx, show, "u1", raw); !errors.Is(err, token.ErrRevoked) || admission.Reason(err) != "revoked" {
		t.Fatalf("revoked: got %v (reason %q)", err, admission.Reason(err))
	}
}

// unreachableKeys is a fetched key set whose issuer has not answered yet: it knows no key.
type unreachableKeys struct{}

func (unreachableKeys) Key(string) (ed25519.PublicKey, bool) { return nil, false }
func (unreachableKeys) Unavailable() bool                    { return true }

// TestLostCacheFailsClosed: after Redis forgets a show whose record says the queue is on, the gate never reads
// that as "off": the state comes back from the record by itself, with its revocations and active admissions.
func TestLostCacheFailsClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A Redis of its own: this test flushes it, as a Redis restarted empty would be.
	private := redistest.Private(t)
	rdb := private.Client
	pool := pgtest.New(t)
	k := admissiontest.Keeper(t, pool, rdb)
	show := admissiontest.Show(t, rdb, "adm-")
	key, _ := token.GenerateKey()
	is := token.NewIssuer(key)
	gate := admission.NewGate(k, token.NewStaticKeys(key.Public()), 0)
	switchOn(t, k, show, true)

	now := time.Now()
	live, exp, _ := is.Issue("u1", show, "live", now, time.Minute)
	kicked, kexp, _ := is.Issue("u2", show, "kicked", now, time.Minute)
	if err := k.AddGrants(ctx, []admission.Grant{
		{ShowID: show, JTI: "live", UserID: "u1", IssuedAt: now, ExpiresAt: exp},
		{ShowID: show, JTI: "kicked", UserID: "u2", IssuedAt: now, ExpiresAt: kexp},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Kick(ctx, show, "kicked"); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Kick(ctx, show, "no-such-jti"); !errors.Is(err, admission.ErrUnknownAdmission) {
		t.Fatalf("kick unknown: got %v, want ErrUnknownAdmission", err)
	}

	for _, wipe := range []string{"show keys", "flushdb"} {
		if wipe == "flushdb" {
			if err := private.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		} else {
			admissiontest.Wipe(ctx, rdb, show)
		}
		// A gate with the settings in memory from before the wipe must not trust "not revoked" either.
		if _, err := gate.Check(ctx, show, "u2", kicked); !errors.Is(err, token.ErrRevoked) {
			t.Fatalf("%s: kicked token: got %v, want ErrRevoked", wipe, err)
		}
		gate.Forget(show)
		if _, err := gate.Check(ctx, show, "u3", ""); !errors.Is(err, admission.ErrRequired) {
			t.Fatalf("%s: no token: got %v, want ErrRequired (the queue is on in the record)", wipe, err)
		}
		if _, err := gate.Check(ctx, show, "u1", live); err != nil {
			t.Fatalf("%s: admitted fan: got %v", wipe, err)
		}
		s, err := k.Settings(ctx, show)
		if err != nil || !s.Enabled || !s.Paused {
			t.Fatalf("%s: settings: got %+v, %v; want on and paused", wipe, s, err)
		}
		if n := rdb.ZCard(ctx, rediskey.QueueActive(show)).Val(); n != 1 {
			t.Fatalf("%s: active = %d, want 1 (the live admission)", wipe, n)
		}
	}
}

// TestStoresDownFailClosed: with Redis unreachable, or with Redis empty and PostgreSQL unreachable, the gate
// answers ErrUnavailable, never "pass".
func TestStoresDownFailClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dead := storetest.DeadAddr(t)
	key, _ := token.GenerateKey()
	keys := token.NewStaticKeys(key.Public())

	pool := pgtest.New(t)
	deadRedis := redis.NewClient(&redis.Options{Addr: dead, MaxRetries: -1})
	t.Cleanup(func() { deadRedis.Close() })
	gate := admission.NewGate(admissiontest.Keeper(t, pool, deadRedis), keys, 0)
	if _, err := gate.Check(ctx, "s1", "u1", ""); !errors.Is(err, admission.ErrUnavailable) {
		t.Fatalf("redis down: got %v, want ErrUnavailable", err)
	}

	rdb := newRedis(t)
	k := admissiontest.Keeper(t, pool, rdb)
	show := admissiontest.Show(t, rdb, "adm-")
	switchOn(t, k, show, false)
	admissiontest.Wipe(ctx, rdb, show)
	closed := pgtest.New(t)
	closed.Close()
	gate = admission.NewGate(admission.NewKeeper(admpostgres.New(closed), admredis.New(rdb), nil), keys, 0)
	if _, err := gate.Check(ctx, show, "u1", ""); !errors.Is(err, admission.ErrUnavailable) {
		t.Fatalf("redis lost the show, postgres down: got %v, want ErrUnavailable", err)
	}
}

func TestUpdateRecordsThenCaches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := newRedis(t)
	pool := pgtest.New(t)
	k := admissiontest.Keeper(t, pool, rdb)
	show := admissiontest.Show(t, rdb, "adm-")
	want := admission.Settings{Enabled: true, Mode: admission.ModeAlways, AdmitPerSecond: 2.5, MaxActive: 7,
		TokenTTLSeconds: 60, Paused: true}
	old, now, err := k.Update(ctx, show, func(admission.Settings) (admission.Settings, error) { return want, nil })
	if err != nil || old != admission.DefaultSettings() || now != want {
		t.Fatalf("update: got %+v -> %+v, %v", old, now, err)
	}
	rec, version, found, err := admpostgres.New(pool).Settings(ctx, show)
	if err != nil || !found || rec != want || version != 1 {
		t.Fatalf("record: got %+v v%d %v %v", rec, version, found, err)
	}
	got, p, err := admredis.New(rdb).Lookup(ctx, show)
	if err != nil || p != admission.Cached || got != want {
		t.Fatalf("cache: got %+v %v %v", got, p, err)
	}
	// Concurrent operators: every change applies, one after the other, and the cache ends at the record's last.
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := k.Update(ctx, show, func(s admission.Settings) (admission.Settings, error) {
				s.MaxActive++
				return s, nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	rec, version, _, _ = admpostgres.New(pool).Settings(ctx, show)
	got, _, _ = admredis.New(rdb).Lookup(ctx, show)
	if rec.MaxActive != 15 || version != 9 || got != rec {
		t.Fatalf("after 8 concurrent changes: record %+v v%d, cache %+v", rec, version, got)
	}
	if err := (admission.Settings{AdmitPerSecond: 0, MaxActive: 1, TokenTTLSeconds: 60}).Validate(); err == nil {
		t.Fatal("zero rate accepted")
	}
}

// TestSyncMarksComplete: Run restores a wiped show and puts the mark back; the mark vouches for no single show,
// so a show with no record still reads as off only because the record says so.
func TestSyncMarksComplete(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rdb := newRedis(t)
	k := admissiontest.Keeper(t, pgtest.New(t), rdb)
	show := admissiontest.Show(t, rdb, "adm-")
	switchOn(t, k, show, false)
	admissiontest.Wipe(ctx, rdb, show)
	go k.Run(ctx, 20*time.Millisecond, time.Hour)
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, p, err := admredis.New(rdb).Lookup(ctx, show)
		if err == nil && p == admission.Cached {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Run did not restore the wiped show: %v %v", p, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ok, err := admredis.New(rdb).Synced(ctx); err != nil || !ok {
		t.Fatalf("synced: %v %v", ok, err)
	}
	// The mark vouches for no single show: a show without settings is the record's to answer (off, here).
	_, p, err := admredis.New(rdb).Lookup(ctx, "never-recorded-"+show)
	if err != nil || p != admission.Unknown {
		t.Fatalf("show without record: got %v %v, want Unknown", p, err)
	}
	if s, err := k.Settings(ctx, "never-recorded-"+show); err != nil || s.Enabled {
		t.Fatalf("show without record: got %+v %v, want off", s, err)
	}
}

// TestAbsentSettingsAskTheRecord: on a Redis Cluster a master's failover can promote a replica that lacks the
// show's newest writes while the mark that the cache was synced, on another master, survives: the cache then
// holds nothing of a show whose queue is on. The keeper must take the settings from the record (and put them
// back), never read the absence as "queue off": that told a whole crowd its queue was closed, and would let the
// gate pass requests without a token.
func TestAbsentSettingsAskTheRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := newRedis(t)
	pool := pgtest.New(t)
	k := admissiontest.Keeper(t, pool, rdb)
	cache := admredis.New(rdb)
	show := admissiontest.Show(t, rdb, "adm-")
	// The operator's switch is on record; every cache write for the show went with the failed master.
	switchOnInRecord(t, pool, show)
	if err := cache.MarkSynced(ctx); err != nil {
		t.Fatal(err)
	}
	gate := admission.NewGate(k, token.NewStaticKeys(), 0)
	if _, err := gate.Check(ctx, show, "u1", ""); !errors.Is(err, admission.ErrRequired) {
		t.Fatalf("gate without a token on a show whose queue is on: %v, want ErrRequired", err)
	}
	s, err := k.Settings(ctx, show)
	if err != nil || !s.Enabled {
		t.Fatalf("settings: got %+v %v, want the record's (on)", s, err)
	}
	if s, p, err := cache.Lookup(ctx, show); err != nil || p != admission.Cached || !s.Enabled {
		t.Fatalf("cache after the lookup: %+v %v %v, want the record's settings restored", s, p, err)
	}
}

// TestPruneKeepsLiveAdmissions: prune forgets the expired admissions of a show whose after-sale report is
// summarised, and keeps the live ones, and the expired ones of a show not summarised yet (the report's figures).
func TestPruneKeepsLiveAdmissions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t)
	rec := admpostgres.New(pool)
	now := time.Now()
	if err := rec.AddGrants(ctx, []admission.Grant{
		{ShowID: "s", JTI: "old", UserID: "u1", IssuedAt: now.Add(-49 * time.Hour), ExpiresAt: now.Add(-48 * time.Hour)},
		{ShowID: "s", JTI: "live", UserID: "u2", IssuedAt: now, ExpiresAt: now.Add(time.Hour)},
		{ShowID: "unsummarised", JTI: "old2", UserID: "u1", IssuedAt: now.Add(-49 * time.Hour), ExpiresAt: now.Add(-48 * time.Hour)},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO sale_reports (show_id, report, summarised_at) VALUES ('s', '{}', now())`); err != nil {
		t.Fatal(err)
	}
	if n, err := rec.Prune(ctx, now.Add(-24*time.Hour)); err != nil || n != 1 {
		t.Fatalf("prune: %d, %v; want 1", n, err)
	}
	live, _, err := rec.Grants(ctx, "s", now)
	if err != nil || len(live) != 1 || live[0].JTI != "live" {
		t.Fatalf("after prune: %+v, %v", live, err)
	}
	if ok, err := rec.Admitted(ctx, "unsummarised", "u1"); err != nil || !ok {
		t.Fatalf("the unsummarised show's admission was pruned: %v %v", ok, err)
	}
}

// TestNoQueueReadOnce: a show whose queue was never set is asked of PostgreSQL once; the record's "off" is then
// cached on the show's own settings key, so later gate checks (each a fresh gate: nothing in its one-second
// memory) are answered by Redis. The operator's switch-on replaces the cached "off" at once, a failover that loses
// the show's keys loses the "off" with them (the record is asked again), and a made-up show id leaves nothing
// behind.
func TestNoQueueReadOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := newRedis(t)
	pool := pgtest.New(t)
	k, rec := admissiontest.CountingKeeper(t, pool, rdb)
	cache := admredis.New(rdb)
	show := admissiontest.Show(t, rdb, "adm-")
	// Booking's info says the show exists.
	showExists(t, rdb, show)
	key, _ := token.GenerateKey()
	keys := token.NewStaticKeys(key.Public())
	check := func(k *admission.Keeper, want error) {
		t.Helper()
		if _, err := admission.NewGate(k, keys, 0).Check(ctx, show, "u1", ""); !errors.Is(err, want) {
			t.Fatalf("gate: got %v, want %v", err, want)
		}
	}

	for range 20 {
		check(k, nil)
	}
	off := admission.DefaultSettings()
	off.Mode = admission.ModeOff
	if s, err := k.Settings(ctx, show); err != nil || s != off {
		t.Fatalf("settings: got %+v, %v; want the defaults (off)", s, err)
	}
	if n := rec.SettingsReads(); n != 1 {
		t.Fatalf("record read %d times for 21 lookups of a show without a queue, want 1", n)
	}
	if s, p, err := cache.Lookup(ctx, show); err != nil || p != admission.Cached || s.Enabled {
		t.Fatalf("cache: %+v %v %v, want off, cached", s, p, err)
	}

	// A failover loses the show's keys, the cached "off" with them: the record is asked again, once.
	admissiontest.Wipe(ctx, rdb, show)
	check(k, nil)
	check(k, nil)
	if n := rec.SettingsReads(); n != 2 {
		t.Fatalf("record read %d times after the show's keys were lost, want 2", n)
	}

	// The operator switches the queue on: the change overwrites the cached "off" (no restore, no read), and
	// every replica's next lookup sees it.
	switchOn(t, k, show, false)
	if s, p, err := cache.Lookup(ctx, show); err != nil || p != admission.Cached || !s.Enabled {
		t.Fatalf("cache after the switch: %+v %v %v, want on", s, p, err)
	}
	check(k, admission.ErrRequired)
	check(admissiontest.Keeper(t, pool, rdb), admission.ErrRequired)
	if n := rec.SettingsReads(); n != 2 {
		t.Fatalf("record read %d times, want still 2 (the switch writes the cache)", n)
	}

	// A show id nobody knows of costs a read every time, as before, and is never cached.
	made := "made-up-" + show
	for i := range 3 {
		if _, err := admission.NewGate(k, keys, 0).Check(ctx, made, "u1", ""); err != nil {
			t.Fatalf("made-up show %d: %v", i, err)
		}
	}
	if n := rec.SettingsReads(); n != 5 {
		t.Fatalf("record read %d times, want 5 (3 for the made-up show)", n)
	}
	if n := rdb.Exists(ctx, rediskey.QueueConfig(made)).Val(); n != 0 {
		t.Fatalf("a made-up show's settings were cached")
	}
}

// TestSyncReplacesOlderSettings: a failover can promote a replica that has the show's keys but lacks their newest
// write, the operator's switch-on over a cached "no queue": nothing is missing, so no lookup asks the record. The
// keeper's periodic sync compares versions and puts the record's settings back.
func TestSyncReplacesOlderSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := newRedis(t)
	pool := pgtest.New(t)
	k := admissiontest.Keeper(t, pool, rdb)
	show := admissiontest.Show(t, rdb, "adm-")
	showExists(t, rdb, show)
	if s, err := k.Settings(ctx, show); err != nil || s.Enabled {
		t.Fatalf("settings: %+v %v, want off", s, err)
	}
	// The switch-on reached the record; its cache write went with the failed master.
	switchOnInRecord(t, pool, show)
	if err := k.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if s, err := k.Settings(ctx, show); err != nil || !s.Enabled {
		t.Fatalf("settings after the sync: %+v %v, want the record's (on)", s, err)
	}
	if v, ok, err := admredis.New(rdb).Version(ctx, show); err != nil || !ok || v != 1 {
		t.Fatalf("cached version: %d %v %v, want 1", v, ok, err)
	}
}

// TestModes: enabled alone still switches between "always" and "off", a mode sets enabled with it, the site-wide
// default mode applies to a show nobody set, and mode and limits survive the cache's loss (restored from the
// record).
func TestModes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := newRedis(t)
	pool := pgtest.New(t)
	k := admissiontest.Keeper(t, pool, rdb)
	if err := k.SetDefaultMode("sometimes"); err == nil {
		t.Fatal("default mode: a made-up mode was accepted")
	}
	if err := k.SetDefaultMode(admission.ModeThreshold); err != nil {
		t.Fatal(err)
	}
	show := admissiontest.Show(t, rdb, "adm-")
	if s, err := k.Settings(ctx, show); err != nil || s.Mode != admission.ModeThreshold || !s.Enabled {
		t.Fatalf("a show nobody set: got mode %q enabled %t, %v; want the site's threshold", s.Mode, s.Enabled, err)
	}
	steps := []struct {
		name    string
		fn      func(admission.Settings) admission.Settings
		mode    string
		enabled bool
	}{
		{"enabled false alone means off", func(s admission.Settings) admission.Settings { s.Enabled = false; return s }, admission.ModeOff, false},
		{"enabled true alone means always", func(s admission.Settings) admission.Settings { s.Enabled = true; return s }, admission.ModeAlways, true},
		{"a mode sets enabled", func(s admission.Settings) admission.Settings {
			s.Mode, s.ActiveUsersThreshold, s.CooldownSeconds = admission.ModeThreshold, 50, 5
			return s
		}, admission.ModeThreshold, true},
		{"off", func(s admission.Settings) admission.Settings { s.Mode = admission.ModeOff; return s }, admission.ModeOff, false},
	}
	for _, st := range steps {
		_, now, err := k.Update(ctx, show, func(s admission.Settings) (admission.Settings, error) { return st.fn(s), nil })
		if err != nil || now.Mode != st.mode || now.Enabled != st.enabled {
			t.Fatalf("%s: got mode %q enabled %t, %v; want %q %t", st.name, now.Mode, now.Enabled, err, st.mode, st.enabled)
		}
	}
	if _, _, err := k.Update(ctx, show, func(s admission.Settings) (admission.Settings, error) {
		s.Mode = "sometimes"
		return s, nil
	}); err == nil {
		t.Fatal("a made-up mode was recorded")
	}
	if _, _, err := k.Update(ctx, show, func(s admission.Settings) (admission.Settings, error) {
		s.Mode, s.ActiveUsersThreshold, s.NewUsersPerMinuteThreshold, s.CooldownSeconds = admission.ModeThreshold, 50, 300, 7
		s.Autotune = admission.Autotune{Enabled: true, MinAdmitPerSecond: 2, MaxAdmitPerSecond: 40, TargetHoldP99Ms: 250}
		s.WhenStoreDown = admission.StoreDown{Policy: admission.StoreDownTrickle, AdmitPerSecond: 5}
		return s, nil
	}); err != nil {
		t.Fatal(err)
	}
	// Redis loses the show's settings: the record brings mode, limits and the store-down policy back.
	if err := rdb.Del(ctx, rediskey.QueueConfig(show)).Err(); err != nil {
		t.Fatal(err)
	}
	s, err := k.Settings(ctx, show)
	want := admission.Tuning{ActiveUsersThreshold: 50, NewUsersPerMinuteThreshold: 300, CooldownSeconds: 7,
		Autotune:      admission.Autotune{Enabled: true, MinAdmitPerSecond: 2, MaxAdmitPerSecond: 40, TargetHoldP99Ms: 250},
		WhenStoreDown: admission.StoreDown{Policy: admission.StoreDownTrickle, AdmitPerSecond: 5},
		Access:        admission.AccessOpen}
	if err != nil || s.Mode != admission.ModeThreshold || !s.Enabled || s.Tuning != want {
		t.Fatalf("after the cache's loss: got mode %q %+v, %v; want threshold %+v", s.Mode, s.Tuning, err, want)
	}
	vals, err := rdb.HMGet(ctx, rediskey.QueueConfig(show), rediskey.QueueMode, rediskey.QueueActiveThreshold,
		rediskey.QueueArrivalThreshold, rediskey.QueueCooldown).Result()
	if err != nil || vals[0] != "threshold" || vals[1] != "50" || vals[2] != "300" || vals[3] != "7" {
		t.Fatalf("the scripts' fields: got %v, %v", vals, err)
	}
}
