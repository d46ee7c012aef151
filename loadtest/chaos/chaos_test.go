package chaos_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/booking/invariant"
	"github.com/flashseat/flashseat/booking/payment/sim"
	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/loadtest/check"
	"github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/crowd"
	"github.com/flashseat/flashseat/loadtest/platformtest"
	"github.com/flashseat/flashseat/shared/infra/storetest"
	"github.com/flashseat/flashseat/shared/token"
)

// settings size a run: the short one fits in make test (about a minute on two cores), the full one is make chaos.
type settings struct {
	fans, seats int
	admit       float64       // admissions per second: slow enough that fans still wait in line when Redis is lost
	gap         time.Duration // quiet time after each recovery, before the next fault
	patience    time.Duration
	duration    time.Duration
	resale      resaleSettings
}

var (
	short = settings{fans: 200, seats: 100, admit: 8, gap: 1500 * time.Millisecond,
		patience: 50 * time.Second, duration: 70 * time.Second, resale: resaleShort}
	full = settings{fans: 1500, seats: 300, admit: 20, gap: 5 * time.Second,
		patience: 3 * time.Minute, duration: 4 * time.Minute, resale: resaleFull}
)

const (
	adminToken    = "adm_chaos_0123456789abcdef"
	authSecret    = "chaos-user-token-secret-0123456789abcdef"
	webhookSecret = "whsec_chaos_0123456789"
	holdTTL       = 20 * time.Second
	reconcile     = time.Second
	newFanWithin  = 10 * time.Second
	notifyWithin  = 10 * time.Second // booking checks every 2 s
)

// watchNotifications reports how long after now the Redis at addr has keyevent expiry notifications on (E and x
// in notify-keyspace-events), or -1 when it still has not after notifyWithin.
func watchNotifications(ctx context.Context, addr string) <-chan time.Duration {
	out := make(chan time.Duration, 1)
	start := time.Now()
	go func() {
		rdb := goredis.NewClient(&goredis.Options{Addr: addr})
		defer rdb.Close()
		for time.Since(start) < notifyWithin && ctx.Err() == nil {
			v, err := rdb.ConfigGet(ctx, "notify-keyspace-events").Result()
			if f := v["notify-keyspace-events"]; err == nil && strings.Contains(f, "E") && strings.ContainsAny(f, "xA") {
				out <- time.Since(start)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		out <- -1
	}()
	return out
}

// TestChaos plays a flash crowd for a queued show against the real binaries and, mid-sale, kills booking
// (SIGKILL), restarts PostgreSQL, kills the edge (SIGKILL) and kills Redis, restarting it empty. Then it judges:
// no violation from the store checker nor between the gateway's ledger and PostgreSQL; no fan lost its place in
// line; no request reached a queued show's booking routes without admission, and no admitted fan's valid token
// was refused on them; no answer was a 500; and a fan who arrives right after the last fault books end to end
// within 10 s of it. Each fault's recovery time and the 502 and 503 answers it caused are reported.
//
// All along, a reseller trades on a show of its own with the face-value exchange on (resale_test.go): its sales
// and payouts are in the same store checker's and gateway ledger's verdict, and the test asserts that sales
// settled and that listings and purchases were tried while the faults were in progress.
func TestChaos(t *testing.T) {
	set, mode := short, "short"
	if os.Getenv("CHAOS") == "full" {
		set, mode = full, "full"
	}
	if testing.Short() {
		t.Skip("the chaos test plays a crowd for about a minute")
	}
	ctx := t.Context()
	pg := storetest.StartPostgres(t)
	rds := storetest.StartRedis(t) // keyspace notifications off, as a fresh Redis has them: booking turns them on
	bookingAddr, edgeAddr, edgeOps := storetest.FreeAddr(t), storetest.FreeAddr(t), storetest.FreeAddr(t)
	payURL := startGateway(t, "http://"+bookingAddr+"/webhooks/payments")
	key, err := token.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	booking := newProcess(t, "booking", bookingAddr, map[string]string{
		"BOOKING_ADDR": bookingAddr, "DATABASE_URL": pg.URL + "&pool_max_conns=16", "REDIS_URL": rds.URL,
		"ADMIN_TOKEN": adminToken, "AUTH_SECRET": authSecret, "HOLD_TTL": holdTTL.String(),
		"RECONCILE_INTERVAL": reconcile.String(), "PAYMENT_TIMEOUT": "2s", "PAYMENT_GATEWAY_URL": payURL,
		"PAYMENT_WEBHOOK_SECRET": webhookSecret, "PAYMENT_RECOVER_INTERVAL": "300ms",
		"TICKET_SIGNING_KEY": base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)),
		"ADMISSION_JWKS_URL": "http://" + edgeAddr + "/.well-known/jwks.json", "LOG_LEVEL": "warn",
	})
	edge := newProcess(t, "edge", edgeAddr, map[string]string{
		"EDGE_ADDR": edgeAddr, "BOOKING_URL": "http://" + bookingAddr, "REDIS_URL": rds.URL, "DATABASE_URL": pg.URL,
		"AUTH_SECRET": authSecret, "ADMIN_TOKEN": adminToken, "ADMISSION_SIGNING_KEY": token.EncodeSeed(key),
		"ADMISSION_KEY_ID": key.ID, "SHUTDOWN_TIMEOUT": "3s", "OPS_ADDR": edgeOps,
	})
	booking.start()
	edge.start()
	base := "http://" + edgeAddr

	tr := client.NewTransport(512)
	t.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(base, tr, client.Options{AdminToken: adminToken, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sc := loadtest.Presets["smoke"]
	sc.Name, sc.Fans, sc.Seats, sc.AdmitPerSecond = "chaos-"+mode, set.fans, set.seats, set.admit
	sc.SaleDelay, sc.Ramp, sc.Patience, sc.Duration = 3*time.Second, 2*time.Second, set.patience, set.duration
	// Admission is paced by the rate alone (no cap on active fans), so fans are still waiting when Redis is lost
	// and the queue moves on after it; a fan done early keeps its slot until its token expires.
	sc.MaxActive, sc.TokenTTL, sc.ProbeShare = set.fans, time.Minute, 0.2
	sc.Pay = loadtest.PayMix{OK: 70, DeclinedThenOK: 10, Slow: 5, Error: 5, Abandon: 10}
	runID := fmt.Sprint(time.Now().UnixNano())
	// The exchange's show first: its sellers book before the crowd's sale opens, and trade through the faults.
	resaleShow, resaleOpens := setupExchange(ctx, t, c, sc, runID)
	show, opens, err := crowd.Setup(ctx, c, sc, runID)
	if err != nil {
		t.Fatal(err)
	}
	// A second queued show, for the fan who comes after the last fault: the crowd may have sold out the first.
	late := sc
	late.Seats, late.AdmitPerSecond, late.MaxActive, late.SaleDelay = 20, 200, 100, time.Second
	lateShow, _, err := crowd.Setup(ctx, c, late, runID+"-late")
	if err != nil {
		t.Fatal(err)
	}

	ex := startExchange(ctx, c, resaleShow, resaleOpens, set.resale)
	prober := startProber(t, c, show)
	played := play(t, ctx, crowd.Config{Client: c, Scenario: sc, ShowID: show, Seed: 13, Log: slog.New(slog.DiscardHandler)})

	// Mid-sale: the queue is admitting and most fans still wait in line; and the exchange's sellers have their
	// tickets to list.
	time.Sleep(time.Until(opens.Add(2 * time.Second)))
	ex.awaitSellers(10 * time.Second)
	health := []string{base + "/readyz", "http://" + bookingAddr + "/readyz", base + "/api/v1/shows/" + lateShow}
	faults := []*fault{
		{Name: "booking killed (SIGKILL) and restarted", inject: func() { booking.kill(); booking.start() }},
		{Name: "PostgreSQL restarted", inject: pg.Restart},
		{Name: "edge killed (SIGKILL) and restarted", inject: func() { edge.kill(); edge.start() }},
		{Name: "Redis killed and restarted empty", inject: func() { rds.Kill(); rds.Start() }},
	}
	var newFan newFanResult
	var notified <-chan time.Duration
	for i, f := range faults {
		f.At = time.Now()
		f.inject()
		f.Restarted = time.Now()
		if i == len(faults)-1 {
			notified = watchNotifications(ctx, rds.Addr)
			// The fan arrives as the last fault ends, before anything is known to have recovered.
			newFan = bookEndToEnd(ctx, c, lateShow)
		}
		f.Recovered = waitHealthy(ctx, health)
		t.Logf("fault %d: %s: recovered after %s", i+1, f.Name, f.Recovered.Sub(f.At).Round(time.Millisecond))
		time.Sleep(set.gap)
	}
	lastFault := faults[len(faults)-1].Restarted
	ex.stop()

	run := <-played
	prober.stop()
	if run == nil {
		t.Fatal("the crowd did not play")
	}
	sum := loadtest.Summarize(run, time.Second)
	pool, err := pgxpool.New(ctx, pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	settle(t, pool)
	resales, err := readResales(ctx, pool, resaleShow)
	if err != nil {
		t.Fatal(err)
	}
	rep := newReport(mode, sc, run, sum, faults, prober, newFan, lastFault, ex, resales)
	t.Log("\n" + rep.markdown())
	if path := os.Getenv("CHAOS_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(rep.markdown()), 0o644); err != nil {
			t.Errorf("report: %v", err)
		}
	}

	// Money and seats, the exchange's sales and payouts with the rest: the store checker, then the gateway's
	// books against PostgreSQL.
	refused := explainRefusals(ctx, pool, run, rep.refused)
	res, err := check.Run(ctx, check.Config{DatabaseURL: pg.URL, RedisURL: rds.URL,
		ShowIDs: []string{show, lateShow, resaleShow}, ReconcileInterval: reconcile})
	if err != nil {
		t.Fatalf("store checker: %v", err)
	}
	for _, v := range res.Violations {
		t.Errorf("store checker: %s: %s", v.Invariant, v.Detail)
	}
	ledger, err := sim.FetchLedger(ctx, payURL, "sk_test_chaos")
	if err != nil {
		t.Fatal(err)
	}
	books := make([]invariant.Money, len(ledger))
	for i, m := range ledger {
		books[i] = invariant.Money{IntentID: m.IntentID, BookingID: m.BookingID, Capturable: m.Capturable,
			Received: m.Received, Refunded: m.Refunded}
	}
	gvs, err := invariant.CheckGateway(ctx, pool, books, invariant.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range gvs {
		t.Errorf("gateway ledger against PostgreSQL: %s", v)
	}

	judgeExchange(t, ex, resales, rep.rows, set.resale)
	// Answers: never a 500.
	if n := len(rep.internalErrors); n > 0 {
		t.Errorf("%d answers the contract forbids, among them: %s", n, strings.Join(first(rep.internalErrors, 10), "; "))
	}
	// Booking turned keyspace notifications on again in the Redis that came back without them.
	if d := <-notified; d < 0 {
		t.Errorf("keyspace notifications were still off %s after Redis restarted", notifyWithin)
	} else {
		t.Logf("keyspace notifications back on %s after Redis restarted", d.Round(10*time.Millisecond))
	}
	// The fan after the last fault.
	switch {
	case newFan.err != nil:
		t.Errorf("the fan arriving after the last fault could not book: %v", newFan.err)
	case newFan.confirmed.Sub(lastFault) > newFanWithin:
		t.Errorf("the fan arriving after the last fault booked %s after it, want within %s",
			newFan.confirmed.Sub(lastFault).Round(time.Millisecond), newFanWithin)
	}
	// The waiting room: places kept (the join hands out a place receipt to come back with), and no request let
	// through without admission.
	judge := t.Errorf
	if !newFan.receipt {
		t.Errorf("the waiting room's join answered no place receipt")
	}
	if n := len(rep.lostPlaces); n > 0 {
		judge("%d fans lost their place, among them: %s", n, strings.Join(first(rep.lostPlaces, 5), "; "))
	}
	if newFan.unknownShow > 0 {
		judge("the waiting room answered %d joins of the fan after the last fault 404 (no such show) instead of 503",
			newFan.unknownShow)
	}
	if n := len(rep.letThrough); n > 0 {
		judge("%d requests without admission were let through, among them: %s", n,
			strings.Join(first(rep.letThrough, 5), "; "))
	}
	// Admitted stays admitted: no booking route refused a fan's valid token, whatever failed meanwhile.
	if n := len(refused); n > 0 {
		judge("%d admitted fans had their valid admission token refused (edge gate refusals since its restart: %s), "+
			"among them: %s", n, gateRefusals(ctx, edgeOps), strings.Join(first(refused, 10), "; "))
	}
}

func first(xs []string, n int) []string { return xs[:min(n, len(xs))] }

// fault is one injected failure and how the platform took it.
type fault struct {
	Name      string
	At        time.Time // injected
	Restarted time.Time // the failed part was running again
	Recovered time.Time // every health check passed again
	inject    func()
}

// waitHealthy waits until every URL answers 200 (both services ready, and a catalog read through the edge) and
// returns when that happened.
func waitHealthy(ctx context.Context, urls []string) time.Time {
	for _, u := range urls {
		waitReady(ctx, u, 2*time.Minute)
	}
	return time.Now()
}

// startGateway runs the payment simulator in this process: the test never kills it, and its ledger is the
// gateway's side of the money.
func startGateway(t *testing.T, webhookURL string) string {
	t.Helper()
	return platformtest.Serve(t, "payment simulator", func(ctx context.Context, ready func(string)) error {
		return sim.Run(ctx, sim.Config{Addr: "127.0.0.1:0", WebhookURL: webhookURL, WebhookSecret: webhookSecret,
			SlowDelay: 3 * time.Second}, nil, ready)
	})
}

// settle waits until no money is in motion: captures and refunds (an exchange's payouts among them) run off the
// fan's path and the recovery worker settles what a kill interrupted.
func settle(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	for deadline := time.Now().Add(45 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var moving int
		if err := pool.QueryRow(t.Context(), `SELECT
			(SELECT count(*) FROM payment_attempts WHERE state IN ('STARTED','PENDING','AUTHORIZED','VOIDING','REFUNDING'))
			+ (SELECT count(*) FROM payments WHERE status IN ('AUTHORIZED','REFUNDING'))
			+ (SELECT count(*) FROM refunds WHERE status = 'PENDING')`).Scan(&moving); err != nil {
			continue
		}
		if moving == 0 {
			return
		}
	}
	t.Log("money still in motion after 45s; judging anyway")
}

// prober asks the queued show's booking routes without admission, all along the run: the seat map and a hold
// (for a seat no hall has, so a failed gate costs nothing), with a valid user token. The gate must answer 401 or
// 403; 429, 5xx and no answer give no verdict; anything else let the request through.
type prober struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	answers []answer
}

type answer struct {
	at     time.Time
	route  string
	status int // 0: no answer
}

func startProber(t *testing.T, c *client.Client, show string) *prober {
	t.Helper()
	var g client.Guest
	var res client.Result
	var err error
	for try := 0; try < 50 && res.Status != http.StatusCreated; try++ {
		g, res, err = c.NewGuest(t.Context())
		if res.Status != http.StatusCreated {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if res.Status != http.StatusCreated {
		t.Fatalf("prober's guest: %d %v", res.Status, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	p := &prober{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			_, res, _ := c.Seats(ctx, g.Token, "", show)
			p.record("GET seats", res.Status)
			_, res, _ = c.Hold(ctx, g.Token, "", show, []string{"PROBE0"}, "")
			p.record("POST hold", res.Status)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

func (p *prober) record(route string, status int) {
	p.mu.Lock()
	p.answers = append(p.answers, answer{time.Now(), route, status})
	p.mu.Unlock()
}

func (p *prober) stop() { p.cancel(); <-p.done }

// report is what the run shows: each fault with its recovery and the answers it cost, and the findings the
// assertions judge.
type report struct {
	mode           string
	sc             loadtest.Scenario
	sum            *loadtest.Summary
	rows           []faultRow
	internalErrors []string
	lostPlaces     []string
	letThrough     []string
	refused        []*loadtest.Fan // admitted fans whose valid token was refused
	errors         []string        // fans whose outcome was an error, with what ended them
	newFan         newFanResult
	lastFault      time.Time
	answers        int
	exchange       string // the exchange's paragraph
}

type faultRow struct {
	name                       string
	at, recovery               time.Duration // at: after the sale opened
	s502, s503, s504, noAnswer int
	trading                    int // listings and purchases the exchange tried meanwhile
}

func newReport(mode string, sc loadtest.Scenario, run *loadtest.Run, sum *loadtest.Summary, faults []*fault,
	p *prober, newFan newFanResult, lastFault time.Time, ex *exchange, resales resaleLedger) *report {
	rep := &report{mode: mode, sc: sc, sum: sum, newFan: newFan, lastFault: lastFault, exchange: ex.markdown(resales)}
	// Every answer of the run, at its wall-clock time: the crowd's and the prober's.
	type obs struct {
		at      time.Time
		what    string
		outcome string
	}
	var all []obs
	for step, samples := range run.Steps {
		for _, s := range samples {
			all = append(all, obs{run.StartedAt.Add(s.At), string(step), s.Outcome})
		}
	}
	p.mu.Lock()
	for _, a := range p.answers {
		all = append(all, obs{a.at, "probe " + a.route, client.Outcome(client.Result{Status: a.status}, nil)})
		if a.status != 401 && a.status != 403 && !loadtest.NoVerdict(a.status) {
			rep.letThrough = append(rep.letThrough, fmt.Sprintf("%s answered %d at +%s after the sale opened",
				a.route, a.status, a.at.Sub(run.StartedAt.Add(run.SaleOpens)).Round(time.Millisecond)))
		}
	}
	p.mu.Unlock()
	ex.mu.Lock()
	for _, c := range ex.calls {
		all = append(all, obs{c.ended, "exchange " + c.what, c.outcome})
	}
	ex.mu.Unlock()
	for _, id := range sum.Tokens.Allowed {
		rep.letThrough = append(rep.letThrough, fmt.Sprintf("fan %d's probe without admission was let through", id))
	}
	rep.answers = len(all)
	for _, o := range all {
		if strings.HasPrefix(o.outcome, "5") && o.outcome != "502" && o.outcome != "503" && o.outcome != "504" {
			rep.internalErrors = append(rep.internalErrors, fmt.Sprintf("%s answered %s at +%s", o.what, o.outcome,
				o.at.Sub(run.StartedAt).Round(time.Millisecond)))
		}
	}
	opened := run.StartedAt.Add(run.SaleOpens)
	trading := ex.during(faults)
	for i, f := range faults {
		row := faultRow{name: f.Name, at: f.At.Sub(opened), recovery: f.Recovered.Sub(f.At), trading: trading[i]}
		for _, o := range all {
			if o.at.Before(f.At) || o.at.After(f.Recovered) {
				continue
			}
			switch {
			case o.outcome == "502":
				row.s502++
			case o.outcome == "503":
				row.s503++
			case o.outcome == "504":
				row.s504++
			case strings.HasPrefix(o.outcome, "err:") && o.outcome != "err:cancelled":
				row.noAnswer++
			}
		}
		rep.rows = append(rep.rows, row)
	}
	rep.refused = refusedFans(run)
	for _, f := range run.Fans {
		switch {
		case f.Outcome == loadtest.OutcomeClosed:
			rep.lostPlaces = append(rep.lostPlaces, fmt.Sprintf("fan %d was told the queue is closed (%s)", f.ID, f.Detail))
		case f.PlaceLost != "":
			rep.lostPlaces = append(rep.lostPlaces, fmt.Sprintf("fan %d: %s", f.ID, f.PlaceLost))
		case f.Joined > 0 && !f.Admitted && (f.Outcome == loadtest.OutcomePatience || f.Outcome == loadtest.OutcomeCutOff):
			// The queue admits at its rate with no cap on active fans, well within a fan's patience: a fan who
			// joined and was neither admitted nor told sold_out was left behind in a line that no longer held it.
			rep.lostPlaces = append(rep.lostPlaces, fmt.Sprintf("fan %d joined at +%s and was never admitted nor told "+
				"sold out (%s)", f.ID, f.Joined.Round(100*time.Millisecond), f.Outcome))
		}
		if f.Outcome == loadtest.OutcomeError {
			rep.errors = append(rep.errors, fmt.Sprintf("fan %d: %s", f.ID, f.Detail))
		}
	}
	return rep
}

// markdown is the report as BENCHMARKS.md shows it.
func (r *report) markdown() string {
	var b strings.Builder
	cmd := "go test -count=1 -run TestChaos ./loadtest/chaos/ (inside make test)"
	if r.mode == "full" {
		cmd = "make chaos"
	}
	fmt.Fprintf(&b, "`%s` (%s): %d fans for %d seats, a queue admitting %g/s, pay mix %s; %d answers observed. "+
		"Recovered: both services ready and a catalog read through the edge answered 200; the answers counted "+
		"are those between the fault and its recovery.\n\n", cmd, r.lastFault.UTC().Format("2006-01-02 15:04 UTC"),
		r.sc.Fans, r.sc.Seats, r.sc.AdmitPerSecond, r.sc.Pay, r.answers)
	b.WriteString("| fault | injected (after the sale opened) | recovered after | 502 | 503 | 504 | no answer | exchange calls |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, row := range r.rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %d | %d | %d |\n", row.name, row.at.Round(100*time.Millisecond),
			row.recovery.Round(10*time.Millisecond), row.s502, row.s503, row.s504, row.noAnswer, row.trading)
	}
	fmt.Fprintf(&b, "\nFan outcomes: %v.\n", r.sum.FanOutcomes)
	for _, st := range loadtest.StepOrder {
		if o := r.sum.Steps[st].Outcomes; len(o) > 0 {
			fmt.Fprintf(&b, "- %s answers: %v\n", st, o)
		}
	}
	if len(r.errors) > 0 {
		fmt.Fprintf(&b, "Fans ended by an answer they could not use: %s.\n", strings.Join(first(r.errors, 5), "; "))
	}
	if r.newFan.err != nil {
		fmt.Fprintf(&b, "The fan arriving after the last fault could not book: %v.\n", r.newFan.err)
	} else {
		fmt.Fprintf(&b, "The fan arriving after the last fault was CONFIRMED %s after it.\n",
			r.newFan.confirmed.Sub(r.lastFault).Round(10*time.Millisecond))
	}
	b.WriteString(r.exchange)
	fmt.Fprintf(&b, "500 answers: %d; fans who lost their place: %d; requests let through without admission: %d; "+
		"admitted fans whose valid token was refused: %d.\n",
		len(r.internalErrors), len(r.lostPlaces), len(r.letThrough), len(r.refused))
	return b.String()
}
