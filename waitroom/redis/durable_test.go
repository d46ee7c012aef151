package redis_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/admission/admissiontest"
	admpostgres "github.com/flashseat/flashseat/shared/admission/postgres"
	admredis "github.com/flashseat/flashseat/shared/admission/redis"
	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/shared/token"
	"github.com/flashseat/flashseat/waitroom"
	"github.com/flashseat/flashseat/waitroom/internal/wrtest"
	wrpostgres "github.com/flashseat/flashseat/waitroom/postgres"
	wrredis "github.com/flashseat/flashseat/waitroom/redis"
)

// TestRebuildFromReceipts: Redis forgets a queue mid-sale. Every fan who presents their place receipt gets the
// same ticket back, so the relative order is the one before the loss; a fan joining after the rebuild goes
// behind all of them; admitted fans' tokens still pass the gate and a kicked fan's is still refused.
func TestRebuildFromReceipts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t)
	show := newShow(t, rdb)
	configure(t, rdb, show, 1000, 3, 600)
	is := issuer(t)
	svc := newService(t, rdb, is, waitroom.Options{})
	gate := admission.NewGate(wrtest.Keeper(t, rdb), token.NewStaticKeys(is.Keys()...), 0)

	fans := users("r", 12)
	receipts := map[string]string{}
	seqs := map[string]int64{}
	for _, u := range fans {
		p, err := svc.Join(ctx, show, u)
		if err != nil || p.Receipt == "" || p.Seq <= 0 {
			t.Fatalf("join %s: %+v, %v", u, p, err)
		}
		receipts[u], seqs[u] = p.Receipt, p.Seq
	}
	tokens := map[string]string{} // the admitted fans' (maxActive 3)
	var kicked string
	for deadline := time.Now().Add(5 * time.Second); len(tokens) < 3; time.Sleep(10 * time.Millisecond) {
		snap, err := svc.Tick(ctx, show, false)
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("tick: %d admitted, %v", len(tokens), err)
		}
		for _, g := range snap.Grants {
			tokens[g.UserID] = g.Token
			kicked = g.UserID
		}
	}
	if _, err := svc.KickUser(ctx, show, kicked); err != nil {
		t.Fatal(err)
	}
	var waiting []string // in queue order
	for _, u := range fans {
		if tokens[u] == "" {
			waiting = append(waiting, u)
		}
	}
	before := map[string]int64{}
	for _, u := range waiting {
		p, err := svc.Status(ctx, show, u)
		if err != nil || p.Status != waitroom.Waiting {
			t.Fatalf("status %s: %+v, %v", u, p, err)
		}
		before[u] = p.Position
	}

	// Redis loses every key of the show (the synced mark stays: as when a node loses one slot's keys).
	if err := rdb.Del(ctx, wrredis.Keys(show)...).Err(); err != nil {
		t.Fatal(err)
	}

	// Before anyone re-joins, the gate already refuses a hold without admission, and restores the show.
	if _, err := gate.Check(ctx, show, "nobody", ""); !errors.Is(err, admission.ErrRequired) {
		t.Fatalf("gate after the loss: got %v, want ErrRequired", err)
	}
	late, err := svc.Join(ctx, show, "late")
	if err != nil || late.Status != waitroom.Waiting {
		t.Fatalf("late joiner: %+v, %v", late, err)
	}
	order := append([]string(nil), waiting...)
	rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	for _, u := range order {
		p, err := svc.JoinWithReceipt(ctx, show, u, receipts[u])
		if err != nil || p.Seq != seqs[u] || p.Position != before[u] {
			t.Fatalf("re-join %s with receipt: %+v, %v; want seq %d position %d", u, p, err, seqs[u], before[u])
		}
		if late.Seq <= p.Seq {
			t.Fatalf("late joiner's ticket %d is not behind %s's %d", late.Seq, u, p.Seq)
		}
	}
	sorted := append([]string(nil), waiting...)
	sort.Slice(sorted, func(i, j int) bool { return seqs[sorted[i]] < seqs[sorted[j]] })
	for i := range sorted {
		if sorted[i] != waiting[i] {
			t.Fatalf("order after the rebuild: %v, want %v", sorted, waiting)
		}
	}
	// A receipt is the fan's own: someone else presenting it gets a ticket of their own at the back.
	thief, err := svc.JoinWithReceipt(ctx, show, "thief", receipts[waiting[0]])
	if err != nil || thief.Seq <= late.Seq {
		t.Fatalf("stolen receipt: %+v, %v", thief, err)
	}

	for u, raw := range tokens {
		_, err := gate.Check(ctx, show, u, raw)
		switch {
		case u == kicked && !errors.Is(err, token.ErrRevoked):
			t.Fatalf("kicked fan %s after the rebuild: got %v, want ErrRevoked", u, err)
		case u != kicked && err != nil:
			t.Fatalf("admitted fan %s after the rebuild: %v", u, err)
		}
		if u == kicked {
			continue
		}
		p, err := svc.Status(ctx, show, u)
		if err != nil || p.Status != waitroom.Admitted || p.Grant.Token != raw {
			t.Fatalf("admitted fan %s's status after the rebuild: %+v, %v", u, p, err)
		}
	}
	if n := rdb.ZCard(ctx, rediskey.QueueActive(show)).Val(); n != 2 {
		t.Fatalf("active after the rebuild: %d, want 2 (the admitted fans not kicked)", n)
	}
	// The queue goes on from the old cursor: the next admission (the kicked fan's slot) is the first fan who
	// was waiting.
	admitNext(t, svc, show, waiting[0])
}

// TestReceiptsAcrossUpgradeAndRotation: Redis forgets a queue while fans hold receipts from before the MAC
// format (Ed25519, as the previous version handed out) or made under the admission key just rotated out. Both
// still prove their places, and each fan is handed a fresh receipt under the current key that proves it too.
func TestReceiptsAcrossUpgradeAndRotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t)
	show := newShow(t, rdb)
	configure(t, rdb, show, 1000, 1, 600)
	old, _ := token.GenerateKey()
	svc := newService(t, rdb, token.NewIssuer(old), waitroom.Options{})
	fans := users("u", 4)
	receipts := map[string]string{}
	seqs := map[string]int64{}
	for i, u := range fans {
		p, err := svc.Join(ctx, show, u)
		if err != nil || p.Receipt == "" {
			t.Fatalf("join %s: %+v, %v", u, p, err)
		}
		receipts[u], seqs[u] = p.Receipt, p.Seq
		if i%2 == 0 { // as the previous version made it
			receipts[u] = ed25519Receipt(t, old, u, show, p.Seq)
		}
	}
	if err := rdb.Del(ctx, wrredis.Keys(show)...).Err(); err != nil {
		t.Fatal(err)
	}
	// The deploy after the loss also rotates the key, keeping the old one whole.
	cur, _ := token.GenerateKey()
	rotated := token.NewIssuer(cur).WithPrevious(old)
	svc = newService(t, rdb, rotated, waitroom.Options{})
	late, err := svc.Join(ctx, show, "late")
	if err != nil {
		t.Fatal(err)
	}
	verify := token.NewReceiptVerifier(token.NewIssuer(cur), 0) // the current key alone
	for _, u := range fans {
		p, err := svc.JoinWithReceipt(ctx, show, u, receipts[u])
		if err != nil || p.Seq != seqs[u] || p.Seq >= late.Seq {
			t.Fatalf("re-join %s with its receipt: %+v, %v; want seq %d, before %d", u, p, err, seqs[u], late.Seq)
		}
		r, err := verify.Verify(p.Receipt, show, u)
		if err != nil || r.Seq != seqs[u] || r.Renew {
			t.Fatalf("%s's renewed receipt: %+v, %v", u, r, err)
		}
		// A status answer also renews an old receipt for the same place.
		q, err := svc.StatusWithReceipt(ctx, show, u, receipts[u])
		if err != nil || q.Seq != seqs[u] {
			t.Fatalf("status %s: %+v, %v", u, q, err)
		}
		if got := svc.Receipt(show, u, q, receipts[u]); got == receipts[u] || got == "" {
			t.Fatalf("status kept %s's old receipt", u)
		}
		if got := svc.Receipt(show, u, q, p.Receipt); got != p.Receipt {
			t.Fatalf("status replaced %s's current receipt", u)
		}
	}
}

// ed25519Receipt is a place receipt as the Ed25519 format made it, before receipts were MACed.
func ed25519Receipt(t *testing.T, k token.Key, user, show string, seq int64) string {
	t.Helper()
	now := time.Now()
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, token.Receipt{Show: show, Seq: seq,
		RegisteredClaims: jwt.RegisteredClaims{Subject: user, Audience: jwt.ClaimStrings{token.ReceiptAudience},
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(token.ReceiptTTL))}})
	tok.Header["kid"] = k.ID
	raw, err := tok.SignedString(k.Private)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestLostSettingsNeverClose: a queue whose settings Redis lost is never answered "closed": the settings come
// back from the record on the next join or tick, and streams hear nothing in between.
func TestLostSettingsNeverClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t)
	show := newShow(t, rdb)
	configure(t, rdb, show, 0.001, 10, 600)
	svc := newService(t, rdb, issuer(t), waitroom.Options{})
	w, p, err := svc.Watch(ctx, show, "s1", "")
	if err != nil || p.Status != waitroom.Waiting {
		t.Fatalf("watch: %+v, %v", p, err)
	}
	defer svc.Unwatch(w)
	rdb.Del(ctx, rediskey.QueueConfig(show))
	snap, err := svc.Tick(ctx, show, false)
	if err != nil || snap.Phase != waitroom.PhaseOpen {
		t.Fatalf("tick after the loss: %+v, %v", snap, err)
	}
	if u := w.Current(); u.Status != waitroom.Waiting || u.Position != 1 {
		t.Fatalf("stream after the loss: %+v", u)
	}
	rdb.Del(ctx, rediskey.QueueConfig(show))
	if p, err := svc.Join(ctx, show, "s2"); err != nil || p.Status != waitroom.Waiting || p.Position != 2 {
		t.Fatalf("join after the loss: %+v, %v", p, err)
	}
}

// TestStreamingFansKeepPlacesAfterLoss: fans streaming from a replica when Redis loses the whole queue are put
// back at their tickets by that replica's next tick, without re-joining; a polling fan gets the place back with
// the receipt on the next status.
func TestStreamingFansKeepPlacesAfterLoss(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t)
	show := newShow(t, rdb)
	configure(t, rdb, show, 0.001, 10, 600) // positions only
	svc := newService(t, rdb, issuer(t), waitroom.Options{})
	var watchers []*waitroom.Watcher
	seqs := map[string]int64{}
	for _, u := range users("st", 4) {
		w, p, err := svc.Watch(ctx, show, u, "")
		if err != nil {
			t.Fatal(err)
		}
		defer svc.Unwatch(w)
		watchers, seqs[u] = append(watchers, w), p.Seq
	}
	poller, err := svc.Join(ctx, show, "poller")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Tick(ctx, show, false); err != nil {
		t.Fatal(err)
	}

	rdb.Del(ctx, wrredis.Keys(show)...)
	if _, err := svc.Tick(ctx, show, false); err != nil {
		t.Fatalf("tick after the loss: %v", err)
	}
	got, err := wrredis.New(rdb).Seqs(ctx, show, users("st", 4))
	if err != nil {
		t.Fatal(err)
	}
	for u, seq := range seqs {
		if got[u] != seq {
			t.Fatalf("streaming fan %s back at ticket %d, want %d", u, got[u], seq)
		}
	}
	for _, w := range watchers {
		if u := w.Current(); u.Status != waitroom.Waiting || u.Position != seqs[w.User] {
			t.Fatalf("stream of %s after the loss: %+v", w.User, u)
		}
	}
	if _, err := svc.Status(ctx, show, "poller"); !errors.Is(err, waitroom.ErrNotInQueue) {
		t.Fatalf("poller without receipt: got %v, want ErrNotInQueue", err)
	}
	p, err := svc.StatusWithReceipt(ctx, show, "poller", poller.Receipt)
	if err != nil || p.Seq != poller.Seq || p.Position != poller.Position {
		t.Fatalf("poller with receipt: %+v, %v; want ticket %d", p, err, poller.Seq)
	}
}

// TestOpenStreamsSurviveALoss: fans whose event streams stay open while Redis loses the queue never re-join with
// their receipt (their browser has no reason to reconnect). The replica holding their streams puts them back at
// their tickets at its next heartbeat flush, so the line keeps its order and moves on.
func TestOpenStreamsSurviveALoss(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rdb := client(t)
	show := newShow(t, rdb)
	configure(t, rdb, show, 1000, 1, 600)
	svc := newService(t, rdb, issuer(t), waitroom.Options{Tick: 20 * time.Millisecond, HeartbeatEvery: 50 * time.Millisecond})

	fans := users("s", 6)
	seqs := map[string]int64{}
	for _, u := range fans {
		w, p, err := svc.Watch(ctx, show, u, "")
		if err != nil || p.Seq <= 0 {
			t.Fatalf("watch %s: %+v, %v", u, p, err)
		}
		defer svc.Unwatch(w)
		seqs[u] = p.Seq
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = svc.Run(ctx) }()
	defer func() { cancel(); <-done }()
	admitted := func() (first string) {
		for _, u := range fans {
			if p, err := svc.Inspect(ctx, show, u); err == nil && p.Status == waitroom.Admitted {
				return u
			}
		}
		return ""
	}
	var first string
	for deadline := time.Now().Add(5 * time.Second); first == ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("nobody admitted")
		}
		first = admitted()
	}

	if err := rdb.Del(ctx, wrredis.Keys(show)...).Err(); err != nil {
		t.Fatal(err)
	}

	// Every fan still waiting is back at its own ticket, without joining again itself.
	for _, u := range fans {
		if u == first {
			continue
		}
		var p waitroom.Place
		var err error
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if p, err = svc.Inspect(ctx, show, u); err == nil && p.Seq == seqs[u] {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("fan %s after the loss: %+v, %v; want back at ticket %d", u, p, err, seqs[u])
			}
		}
	}
}

// TestLostSettingsNeverClosed: a cluster failover promoted a replica lacking the show's newest writes: the queue
// is on in the record, the cache holds nothing of the show, and the synced mark (on another master) survived.
// Joins, polls and ticks must restore the queue from the record, never tell the fans "closed".
func TestLostSettingsNeverClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t)
	show := newShow(t, rdb)
	openSale(t, rdb, show)
	svc := newService(t, rdb, issuer(t), waitroom.Options{})
	if _, _, _, err := admpostgres.New(database(t)).Update(ctx, show, func(admission.Settings) (admission.Settings, error) {
		return admission.Settings{Enabled: true, AdmitPerSecond: 1000, MaxActive: 2, TokenTTLSeconds: 600}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := admredis.New(rdb).MarkSynced(ctx); err != nil {
		t.Fatal(err)
	}
	fans := users("f", 4)
	for _, u := range fans {
		if p, err := svc.Join(ctx, show, u); err != nil || p.Status != waitroom.Waiting || p.Seq <= 0 {
			t.Fatalf("join %s: %+v, %v; want a ticket", u, p, err)
		}
	}
	// And again for a poll and a tick meeting the loss first.
	if err := rdb.Del(ctx, rediskey.QueueConfig(show)).Err(); err != nil {
		t.Fatal(err)
	}
	if p, err := svc.Status(ctx, show, fans[0]); err != nil || p.Status != waitroom.Waiting {
		t.Fatalf("status after the loss: %+v, %v; want waiting", p, err)
	}
	if err := rdb.Del(ctx, rediskey.QueueConfig(show)).Err(); err != nil {
		t.Fatal(err)
	}
	snap, err := svc.Tick(ctx, show, false)
	if err != nil || snap.Phase == waitroom.PhaseClosed {
		t.Fatalf("tick after the loss: phase %s, %v", snap.Phase, err)
	}
}

// TestNoQueueAnsweredFromCache: joins, polls and ticks of a show whose queue was never set ask PostgreSQL once;
// the record's "off" is cached on the show's settings key and answers the rest. The operator's switch-on takes
// effect at the next join, and the cached "off" lost with the show's keys is asked again, never guessed.
func TestNoQueueAnsweredFromCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t)
	show := newShow(t, rdb)
	openSale(t, rdb, show)
	k, rec := admissiontest.CountingKeeper(t, database(t), rdb)
	svc := waitroom.New(wrredis.New(rdb), wrpostgres.New(database(t)), k, issuer(t), waitroom.Options{})
	for _, u := range users("n", 5) {
		if p, err := svc.Join(ctx, show, u); err != nil || p.Status != waitroom.Closed {
			t.Fatalf("join %s: %+v, %v; want closed", u, p, err)
		}
	}
	if snap, err := svc.Tick(ctx, show, false); err != nil || snap.Phase != waitroom.PhaseClosed {
		t.Fatalf("tick: phase %s, %v; want closed", snap.Phase, err)
	}
	if n := rec.SettingsReads(); n != 1 {
		t.Fatalf("record read %d times for five joins and a tick, want 1", n)
	}

	// A failover loses the show's keys; booking's info comes back with its next reconcile.
	rdb.Del(ctx, wrredis.Keys(show)...)
	openSale(t, rdb, show)
	if p, err := svc.Join(ctx, show, "n0"); err != nil || p.Status != waitroom.Closed {
		t.Fatalf("join after the loss: %+v, %v; want closed", p, err)
	}
	if n := rec.SettingsReads(); n != 2 {
		t.Fatalf("record read %d times after the loss, want 2", n)
	}

	if _, _, err := svc.UpdateSettings(ctx, show, func(s admission.Settings) (admission.Settings, error) {
		s.Enabled = true
		return s, nil
	}); err != nil {
		t.Fatal(err)
	}
	if p, err := svc.Join(ctx, show, "n1"); err != nil || p.Status != waitroom.Waiting || p.Seq <= 0 {
		t.Fatalf("join after the switch-on: %+v, %v; want a ticket", p, err)
	}
	if n := rec.SettingsReads(); n != 2 {
		t.Fatalf("record read %d times, want still 2 (the switch-on overwrote the cached off)", n)
	}
}

// TestRebuiltTicketComesBackOnce: Redis forgets a queue mid-sale, and the first fans in line are slow to come
// back (their phones were asleep): the queue goes on with the fans who came back first, so its cursor passes the
// slow fans' tickets. A slow fan who comes back with its receipt within the turn hold still gets its ticket back,
// at the head of the line, and is admitted before the fans behind it; it gets it back once: after its admission,
// the same receipt only buys a new place at the back.
func TestRebuiltTicketComesBackOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t)
	show := newShow(t, rdb)
	configure(t, rdb, show, 1000, 1, 600)
	svc := newService(t, rdb, issuer(t), waitroom.Options{})
	fans := users("slow", 4) // in line in this order
	receipts := map[string]string{}
	seqs := map[string]int64{}
	for _, u := range fans {
		p, err := svc.Join(ctx, show, u)
		if err != nil || p.Receipt == "" {
			t.Fatalf("join %s: %+v, %v", u, p, err)
		}
		receipts[u], seqs[u] = p.Receipt, p.Seq
	}
	admitOne := func(want string) {
		t.Helper()
		admitNext(t, svc, show, want)
		if _, err := svc.KickUser(ctx, show, want); err != nil { // done with their turn: the slot frees
			t.Fatal(err)
		}
	}

	if err := rdb.Del(ctx, wrredis.Keys(show)...).Err(); err != nil {
		t.Fatal(err)
	}
	// The third fan is back first and admitted: the cursor passes the first two fans' tickets.
	if p, err := svc.JoinWithReceipt(ctx, show, fans[2], receipts[fans[2]]); err != nil || p.Seq != seqs[fans[2]] {
		t.Fatalf("the third fan back: %+v, %v", p, err)
	}
	if p, err := svc.JoinWithReceipt(ctx, show, fans[3], receipts[fans[3]]); err != nil || p.Seq != seqs[fans[3]] {
		t.Fatalf("the fourth fan back: %+v, %v", p, err)
	}
	admitOne(fans[2])

	// The first fan is back: its ticket again, at the head, admitted before the fourth.
	p, err := svc.JoinWithReceipt(ctx, show, fans[0], receipts[fans[0]])
	if err != nil || p.Status != waitroom.Waiting || p.Seq != seqs[fans[0]] || p.Position != 1 {
		t.Fatalf("the first fan back after the cursor passed it: %+v, %v; want its ticket %d at the head", p, err, seqs[fans[0]])
	}
	admitOne(fans[0])

	// Once: the same receipt again, after its turn, is a new place behind everyone.
	again, err := svc.JoinWithReceipt(ctx, show, fans[0], receipts[fans[0]])
	if err != nil || again.Status != waitroom.Waiting || again.Seq <= seqs[fans[3]] {
		t.Fatalf("the first fan's receipt a second time: %+v, %v; want a new place behind the fourth fan", again, err)
	}
	admitOne(fans[3])
}

// TestSkippedBeforeTheLossComesBack: before Redis loses a queue, the cursor passes two fans: one served (admitted,
// then done) and one skipped while away (its phone asleep at its turn). The loss takes the skipped list with it;
// the admission record still tells them apart. Back with their receipts within the turn hold, the skipped fan gets
// its ticket back at the head of the line, once, and the served fan only a new place at the back.
func TestSkippedBeforeTheLossComesBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t)
	show := newShow(t, rdb)
	configure(t, rdb, show, 1000, 1, 600)
	svc := newService(t, rdb, issuer(t), waitroom.Options{Grace: time.Second})
	store := wrredis.New(rdb)
	receipts := map[string]string{}
	seqs := map[string]int64{}
	for _, u := range []string{"served", "asleep", "next", "last"} {
		p, err := svc.Join(ctx, show, u)
		if err != nil || p.Receipt == "" {
			t.Fatalf("join %s: %+v, %v", u, p, err)
		}
		receipts[u], seqs[u] = p.Receipt, p.Seq
	}
	tick := func() waitroom.TickResult {
		t.Helper()
		snap, err := svc.Tick(ctx, show, false)
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	// "served" is admitted and done; then "asleep" misses its turn while "next" and "last" keep their streams.
	admitNext(t, svc, show, "served")
	if _, err := svc.KickUser(ctx, show, "served"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // past the grace: only fans who touch are present
	if _, err := store.Touch(ctx, show, []string{"next", "last"}); err != nil {
		t.Fatal(err)
	}
	admitNext(t, svc, show, "next") // asleep skipped
	// The cursor, past "next" (still admitted, so nobody else is), reaches the record (at most a second behind).
	rec := wrpostgres.New(database(t))
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		tick()
		d, err := rec.Queue(ctx, show)
		if err != nil {
			t.Fatal(err)
		}
		if d.Cursor >= seqs["next"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("recorded cursor %d, want at least %d", d.Cursor, seqs["next"])
		}
	}

	if err := rdb.Del(ctx, wrredis.Keys(show)...).Err(); err != nil {
		t.Fatal(err)
	}
	if p, err := svc.JoinWithReceipt(ctx, show, "last", receipts["last"]); err != nil || p.Seq != seqs["last"] {
		t.Fatalf("last back: %+v, %v", p, err)
	}
	p, err := svc.JoinWithReceipt(ctx, show, "asleep", receipts["asleep"])
	if err != nil || p.Status != waitroom.Waiting || p.Seq != seqs["asleep"] || p.Position != 1 {
		t.Fatalf("the fan skipped before the loss: %+v, %v; want its ticket %d at the head", p, err, seqs["asleep"])
	}
	s, err := svc.JoinWithReceipt(ctx, show, "served", receipts["served"])
	if err != nil || s.Status != waitroom.Waiting || s.Seq <= seqs["last"] {
		t.Fatalf("the fan served before the loss: %+v, %v; want a new place behind last", s, err)
	}
	if _, err := svc.KickUser(ctx, show, "next"); err != nil { // its slot frees
		t.Fatal(err)
	}
	admitNext(t, svc, show, "asleep") // first after the loss
	if _, err := svc.KickUser(ctx, show, "asleep"); err != nil {
		t.Fatal(err)
	}
	again, err := svc.JoinWithReceipt(ctx, show, "asleep", receipts["asleep"])
	if err != nil || again.Seq <= seqs["last"] {
		t.Fatalf("the skipped fan's receipt a second time: %+v, %v; want a new place at the back", again, err)
	}
}

// TestPositionsAfterARebuildCountFans: a queue rebuilt after Redis lost it hands new tickets out above the ceiling
// reserved before the loss, thousands of ticket numbers behind the fans who come back with their receipts. A fan
// who joins then is told how many fans are ahead of it, in its join answer, its stream and its status, not how
// many ticket numbers; the fans back with their receipts keep the positions they had.
func TestPositionsAfterARebuildCountFans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t)
	show := newShow(t, rdb)
	configure(t, rdb, show, 1000, 1, 600)
	svc := newService(t, rdb, issuer(t), waitroom.Options{})
	fans := users("f", 5)
	receipts := map[string]string{}
	for _, u := range fans {
		p, err := svc.Join(ctx, show, u)
		if err != nil || p.Receipt == "" {
			t.Fatalf("join %s: %+v, %v", u, p, err)
		}
		receipts[u] = p.Receipt
	}
	if err := rdb.Del(ctx, wrredis.Keys(show)...).Err(); err != nil {
		t.Fatal(err)
	}
	for i, u := range []string{fans[1], fans[3]} { // two of the five are back
		p, err := svc.JoinWithReceipt(ctx, show, u, receipts[u])
		if want := int64(2 + 2*i); err != nil || p.Position != want {
			t.Fatalf("%s back with its receipt: %+v, %v; want its position %d as before", u, p, err, want)
		}
	}
	w, p, err := svc.Watch(ctx, show, "late", "")
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Unwatch(w)
	if p.Seq < 1000 || p.Position != 3 {
		t.Fatalf("a fan joining after the rebuild: %+v; want a ticket above the reserved ceiling at position 3", p)
	}
	admitNext(t, svc, show, fans[1])
	if u := w.Current(); u.Position != 2 {
		t.Fatalf("the late fan's stream says position %d, want 2 (one fan ahead)", u.Position)
	}
	if st, err := svc.Status(ctx, show, "late"); err != nil || st.Position != 2 {
		t.Fatalf("the late fan's status: %+v, %v; want position 2", st, err)
	}
}
