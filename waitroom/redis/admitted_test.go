package redis_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/admission/admissiontest"
	admpostgres "github.com/flashseat/flashseat/shared/admission/postgres"
	admredis "github.com/flashseat/flashseat/shared/admission/redis"
	"github.com/flashseat/flashseat/shared/token"
	"github.com/flashseat/flashseat/waitroom"
	"github.com/flashseat/flashseat/waitroom/internal/wrtest"
	wrpostgres "github.com/flashseat/flashseat/waitroom/postgres"
	wrredis "github.com/flashseat/flashseat/waitroom/redis"
)

// hookedRecord is the real admission record with a hook around recording admissions: a Redis lost just before
// or just after the write.
type hookedRecord struct {
	admission.Record
	before, after func()
	down          atomic.Bool // PostgreSQL unreachable: recording fails
}

func (r *hookedRecord) AddGrants(ctx context.Context, gs []admission.Grant) error {
	if r.before != nil {
		r.before()
	}
	if r.down.Load() {
		return errors.New("record down")
	}
	err := r.Record.AddGrants(ctx, gs)
	if r.after != nil {
		r.after()
	}
	return err
}

// onRecord is a replica whose admissions are recorded through rec (on the test's database).
func onRecord(t testing.TB, rdb goredis.UniversalClient, is *token.Issuer, rec *hookedRecord) *waitroom.Service {
	t.Helper()
	return waitroom.New(wrredis.New(rdb), wrpostgres.New(wrtest.Database(t)),
		admission.NewKeeper(rec, admredis.New(rdb), nil), is, waitroom.Options{})
}

// TestAdmittedStaysAdmitted: a replica admits fans (the Lua pop-and-issue) and then dies before recording the
// admissions, or Redis loses the queue just before or just after the record write. No fan is ever handed a token
// for an admission the record lacks; every fan who holds one is still admitted afterwards (the same token, by
// status and at the gate); and no fan loses its place: the fans admitted but never told are admitted again
// before anyone who was behind them.
func TestAdmittedStaysAdmitted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		crash          bool // the admitting replica dies at the record write, after the script admitted
		wipeAfterCrash bool // ... and then Redis loses the queue, before anyone asked for the fans' tokens
		wipeBefore     bool // Redis loses the queue just before the record write
		wipeAfter      bool // ... just after it
	}{
		{name: "replica dies before recording", crash: true},
		{name: "replica dies before recording, then Redis is lost", crash: true, wipeAfterCrash: true},
		{name: "Redis lost just before the record write", wipeBefore: true},
		{name: "Redis lost just after the record write", wipeAfter: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rdb := client(t)
			show := newShow(t, rdb)
			configure(t, rdb, show, 1000, 3, 600)
			is := issuer(t)
			db := wrtest.Database(t)
			gate := admission.NewGate(wrtest.Keeper(t, rdb), token.NewStaticKeys(is.Keys()...), 0)
			wipe := func() {
				rdb.Del(ctx, wrredis.Keys(show)...)
				admissiontest.Wipe(ctx, rdb, show)
			}

			// The first replica, with its faults. Dying is its tick's context ending as the record write starts:
			// nothing it would do from there on happens.
			tickCtx, die := context.WithCancel(ctx)
			defer die()
			var once sync.Once
			rec := &hookedRecord{Record: admpostgres.New(db)}
			if tc.crash {
				rec.before = die
			}
			if tc.wipeBefore {
				rec.before = func() { once.Do(wipe) }
			}
			if tc.wipeAfter {
				rec.after = func() { once.Do(wipe) }
			}
			svc1 := onRecord(t, rdb, is, rec)

			fans := users("a", 6)
			receipts, seqs := map[string]string{}, map[string]int64{}
			var watchers []*waitroom.Watcher
			for i, u := range fans {
				var p waitroom.Place
				var err error
				if i%2 == 0 { // half stream, half poll
					var w *waitroom.Watcher
					w, p, err = svc1.Watch(ctx, show, u, "")
					if w != nil {
						defer svc1.Unwatch(w)
						watchers = append(watchers, w)
					}
				} else {
					p, err = svc1.Join(ctx, show, u)
				}
				if err != nil || p.Receipt == "" {
					t.Fatalf("join %s: %+v, %v", u, p, err)
				}
				receipts[u], seqs[u] = p.Receipt, p.Seq
			}
			admittedFirst := map[string]bool{} // by the script on the first replica
			for deadline := time.Now().Add(5 * time.Second); len(admittedFirst) == 0; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the first replica admitted nobody")
				}
				snap, _ := svc1.Tick(tickCtx, show, false)
				for _, g := range snap.Grants {
					admittedFirst[g.UserID] = true
				}
			}
			// What the first replica's streams told their fans.
			seen := map[string]string{} // user -> token a fan was handed
			for _, w := range watchers {
				if u := w.Current(); u.Grant != nil && u.Grant.Token != "" {
					seen[w.User] = u.Grant.Token
				}
			}
			if tc.wipeAfterCrash {
				wipe()
			}

			// A second replica serves the fans from now on. Every fan comes back once (its status, with its
			// receipt, as the page does after a lost stream) before the queue moves on: the line holds the
			// places of the fans who are there, and a fan not back yet cannot be admitted in its turn.
			svc2 := newService(t, rdb, is, waitroom.Options{Tick: 20 * time.Millisecond})
			admittedAt := map[string]time.Time{}
			var mu sync.Mutex
			note := func(u string, p waitroom.Place) {
				mu.Lock()
				defer mu.Unlock()
				if old, ok := seen[u]; ok && old != p.Grant.Token {
					t.Errorf("fan %s was handed token %q and then %q", u, old, p.Grant.Token)
				}
				seen[u], admittedAt[u] = p.Grant.Token, time.Now()
			}
			for _, u := range fans {
				if p, err := svc2.StatusWithReceipt(ctx, show, u, receipts[u]); err != nil {
					t.Fatalf("fan %s back: %v", u, err)
				} else if p.Status == waitroom.Admitted {
					note(u, p)
				}
			}
			runCtx, stop := context.WithCancel(ctx)
			ran := make(chan struct{})
			go func() { defer close(ran); _ = svc2.Run(runCtx) }()
			defer func() { stop(); <-ran }()
			var wg sync.WaitGroup
			for _, u := range fans {
				wg.Add(1)
				go func() { // each fan polls with its receipt, as the page does after a lost stream
					defer wg.Done()
					for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline) && runCtx.Err() == nil; time.Sleep(20 * time.Millisecond) {
						p, err := svc2.StatusWithReceipt(runCtx, show, u, receipts[u])
						if err == nil && p.Status == waitroom.Admitted {
							note(u, p)
							return
						}
					}
				}()
			}
			// The first three tickets must be admitted (again) before the fans behind them: maxActive is 3, so
			// the others get in only if a slot is wrongly free. Stop when they are.
			for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				mu.Lock()
				n := 0
				for u := range admittedFirst {
					if _, ok := admittedAt[u]; ok {
						n++
					}
				}
				mu.Unlock()
				if n == len(admittedFirst) {
					break
				}
				if time.Now().After(deadline) {
					mu.Lock()
					t.Fatalf("fans admitted on the first replica %v; admitted since: %v", admittedFirst, admittedAt)
				}
			}
			stop()
			wg.Wait()

			for u := range admittedAt {
				if !admittedFirst[u] {
					t.Errorf("fan %s (ticket %d) was admitted although the fans admitted before the fault hold every slot",
						u, seqs[u])
				}
			}
			// Every token handed out is on record and passes the gate, after one more loss of Redis too.
			live, _, err := admpostgres.New(db).Grants(ctx, show, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			recorded := map[string]bool{}
			for _, g := range live {
				recorded[g.UserID+" "+g.JTI] = true
			}
			wipe()
			for u, raw := range seen {
				claims, err := gate.Check(ctx, show, u, raw)
				if err != nil {
					t.Errorf("fan %s's token at the gate: %v", u, err)
					continue
				}
				if !recorded[u+" "+claims.ID] {
					t.Errorf("fan %s holds a token for admission %s, which the record lacks", u, claims.ID)
				}
				p, err := svc2.Status(ctx, show, u)
				if err != nil || p.Status != waitroom.Admitted || p.Grant.Token != raw {
					t.Errorf("fan %s's status after Redis was lost again: %+v, %v", u, p, err)
				}
			}
			if n := rdb.ZCard(ctx, wrredis.Unrecorded(show)).Val(); n != 0 {
				t.Errorf("%d admissions still unrecorded", n)
			}
		})
	}
}

// TestOverdueAdmissionsRecorded: admissions whose replica died before recording them are recorded by another
// replica's ticks within a few seconds, though no fan asks for them.
func TestOverdueAdmissionsRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t)
	show := newShow(t, rdb)
	configure(t, rdb, show, 1000, 2, 600)
	is := issuer(t)
	tickCtx, die := context.WithCancel(ctx)
	defer die()
	db := wrtest.Database(t)
	svc1 := onRecord(t, rdb, is, &hookedRecord{Record: admpostgres.New(db), before: die})
	for _, u := range users("o", 3) {
		if _, err := svc1.Join(ctx, show, u); err != nil {
			t.Fatal(err)
		}
	}
	var admitted []waitroom.Grant
	for deadline := time.Now().Add(5 * time.Second); len(admitted) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("nobody admitted")
		}
		snap, _ := svc1.Tick(tickCtx, show, false)
		admitted = snap.Grants
	}
	svc2 := newService(t, rdb, is, waitroom.Options{})
	rec := admpostgres.New(db)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := svc2.Tick(ctx, show, false); err != nil {
			t.Fatal(err)
		}
		live, _, err := rec.Grants(ctx, show, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if len(live) == len(admitted) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("recorded %d of the %d admissions the dead replica made", len(live), len(admitted))
		}
	}
	if n := rdb.ZCard(ctx, wrredis.Unrecorded(show)).Val(); n != 0 {
		t.Fatalf("%d admissions still marked unrecorded", n)
	}
}

// TestNoTokensWhileRecordDown: while admissions cannot be recorded, a fan the script admitted is told to retry
// (503), never handed a token, and the replica admits nobody else meanwhile; once the record is back the fan gets
// its token and the line moves on.
func TestNoTokensWhileRecordDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t)
	show := newShow(t, rdb)
	configure(t, rdb, show, 5, 100, 600)
	rec := &hookedRecord{Record: admpostgres.New(wrtest.Database(t))}
	svc := onRecord(t, rdb, issuer(t), rec)
	fans := users("d", 10)
	for _, u := range fans {
		if _, err := svc.Join(ctx, show, u); err != nil {
			t.Fatal(err)
		}
	}
	rec.down.Store(true)
	var first []waitroom.Grant
	for deadline := time.Now().Add(5 * time.Second); len(first) == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("nobody admitted")
		}
		snap, err := svc.Tick(ctx, show, false)
		if err != nil {
			t.Fatal(err)
		}
		first = snap.Grants
	}
	for _, g := range first {
		if g.Token != "" {
			t.Fatalf("a token was signed for %s though its admission is not recorded", g.UserID)
		}
		if p, err := svc.Status(ctx, show, g.UserID); !errors.Is(err, waitroom.ErrUnavailable) {
			t.Fatalf("status of %s, admitted but not recorded: %+v, %v; want ErrUnavailable", g.UserID, p, err)
		}
	}
	// The rate would admit a fan every 200 ms; for the next 600 ms (well inside the 2 s pause) it admits nobody.
	for end := time.Now().Add(600 * time.Millisecond); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		snap, err := svc.Tick(ctx, show, false)
		if err != nil || len(snap.Grants) > 0 {
			t.Fatalf("tick while the record is down: %d admitted, %v", len(snap.Grants), err)
		}
	}
	rec.down.Store(false)
	for _, g := range first {
		p, err := svc.Status(ctx, show, g.UserID)
		if err != nil || p.Status != waitroom.Admitted || p.Grant.Token == "" {
			t.Fatalf("status of %s with the record back: %+v, %v", g.UserID, p, err)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		snap, err := svc.Tick(ctx, show, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(snap.Grants) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("admission did not resume with the record back")
		}
	}
}
