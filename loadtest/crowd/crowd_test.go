package crowd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/loadtest/baseline"
	"github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/platformtest"
)

// The crowd plays against the real platform (edge, waiting room, booking, payment simulator), started in this
// process by platformtest, exactly as the command plays against one it reaches over the network. The platform is
// tuned only so that every behaviour shows up within seconds: a slow card takes 3s against a 2s gateway timeout
// (so it is a 202 the recovery worker settles), the recovery worker runs every 300ms, and the payment circuit
// breaker does not open on the gateway errors the crowd provokes on purpose (it would make the other fans wait out
// its 10s cooldown, a behaviour of booking's own tests). Booking's pool is small: two platforms run at once here,
// beside the smoke test's, on a server shared with every test of the machine. edge is further edge variables.
func start(t *testing.T, edge map[string]string) (*client.Client, *platformtest.Platform) {
	t.Helper()
	return startWith(t, platformtest.Options{MaxConns: 8, Edge: edge})
}

// startWith is start with further options (the stores, the pool); the tuning above is applied over them.
func startWith(t *testing.T, opts platformtest.Options) (*client.Client, *platformtest.Platform) {
	t.Helper()
	opts.HoldTTL, opts.PaymentTimeout, opts.SlowDelay = time.Minute, 2*time.Second, 3*time.Second
	opts.Booking = map[string]string{"PAYMENT_RECOVER_INTERVAL": "300ms", "PAYMENT_BREAKER_MIN_CALLS": "1000"}
	p := platformtest.Start(t, opts)
	tr := client.NewTransport(256)
	t.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(p.BaseURL, tr, client.Options{AdminToken: p.AdminToken, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}

// TestSales plays queued sales, each on its own show, side by side on one platform.
func TestSales(t *testing.T) {
	t.Parallel()
	c, p := start(t, nil)
	for name, test := range map[string]func(*testing.T, *client.Client, *platformtest.Platform){
		"QueueScenario":                   testQueueScenario,
		"EveryPaymentBehaviour":           testEveryPaymentBehaviour,
		"ConflictRetriedWithAlternatives": testConflictRetriedWithAlternatives,
		"PlayAgainstAnExistingShow":       testPlayAgainstAnExistingShow,
		"LostHoldAnswer":                  testLostHoldAnswer,
		"GatewayTimeoutOnHold":            testGatewayTimeoutOnHold,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, c, p)
		})
	}
}

// queueScenario is a small smoke: the sale opens a moment after the crowd has joined, and the queue admits fast.
func queueScenario(fans, seats int) loadtest.Scenario {
	sc := loadtest.Presets["smoke"]
	sc.Fans, sc.Seats = fans, seats
	sc.SaleDelay, sc.Ramp, sc.Duration, sc.Patience = 500*time.Millisecond, 300*time.Millisecond, 45*time.Second, 35*time.Second
	sc.AdmitPerSecond = 50
	sc.Pay = loadtest.PayMix{OK: 1, DeclinedThenOK: 1, Slow: 1, Error: 1, Abandon: 1}
	return sc
}

// wantOutcome is where each payment behaviour must end against the contract; an abandoned hold stays HELD.
var wantOutcome = map[loadtest.PayBehaviour]struct{ outcome, status string }{
	loadtest.PayOK:             {loadtest.OutcomeConfirmed, "CONFIRMED"},
	loadtest.PayDeclinedThenOK: {loadtest.OutcomeConfirmed, "CONFIRMED"},
	loadtest.PaySlow:           {loadtest.OutcomeConfirmed, "CONFIRMED"},
	loadtest.PayError:          {loadtest.OutcomeCancelled, "CANCELLED"},
	loadtest.PayAbandon:        {loadtest.OutcomeAbandoned, "HELD"},
}

// testQueueScenario plays a contended sale: more fans than seats, half of them after the same best seats, every
// payment behaviour in the mix, a share of fans probing the gate while they wait.
func testQueueScenario(t *testing.T, c *client.Client, p *platformtest.Platform) {
	sc := queueScenario(60, 30)
	sc.HotShare, sc.GroupMin, sc.GroupMax, sc.ProbeShare = 0.5, 1, 4, 0.3

	r, err := Play(context.Background(), Config{Client: c, Scenario: sc, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	s := loadtest.Summarize(r, time.Second)
	t.Logf("outcomes %v; holds %v; pay %v", s.FanOutcomes, s.Steps[loadtest.StepHold].Outcomes, s.Steps[loadtest.StepPay].Outcomes)
	if v := loadtest.CrowdViolations(s); len(v) != 0 {
		t.Errorf("got violations %v, want none", v)
	}
	for _, o := range []string{loadtest.OutcomeError, loadtest.OutcomeRefused, loadtest.OutcomeCutOff,
		loadtest.OutcomePending, loadtest.OutcomeExpired} {
		if s.FanOutcomes[o] > 0 {
			t.Errorf("got %d fans with outcome %s: %v", s.FanOutcomes[o], o, details(r, o))
		}
	}
	if s.Confirmed == 0 || s.FanOutcomes[loadtest.OutcomeSoldOut] == 0 || s.SoldOutAfter <= 0 {
		t.Errorf("got outcomes %v and sell-out after %s, want some confirmed, some sold out and a sell-out time",
			s.FanOutcomes, s.SoldOutAfter)
	}

	// The queue was followed over the event stream, to admission: no stream failed, nobody fell back to polling,
	// and the event ids told each fan its place in line.
	if s.StreamFailures != 0 || s.Steps[loadtest.StepStatus].Count != 0 {
		t.Errorf("got %d stream failures and %d status polls, want the stream to carry every fan",
			s.StreamFailures, s.Steps[loadtest.StepStatus].Count)
	}
	positioned := 0
	for _, f := range r.Fans {
		if len(f.Positions) > 0 {
			positioned++
		}
	}
	if s.Admitted < sc.Fans/2 || positioned == 0 || s.Fairness.Tickets == 0 {
		t.Errorf("got %d admitted, %d fans told a position, %d checked by ticket; want most admitted after waiting in line",
			s.Admitted, positioned, s.Fairness.Tickets)
	}

	// Probes: made while waiting, every one answered by the gate with a refusal.
	if s.Tokens.Probes == 0 || len(s.Tokens.Allowed) != 0 || s.Tokens.Unclear != 0 {
		t.Errorf("got %d probes, %d let through, %d unclear; want probes, all refused", s.Tokens.Probes,
			len(s.Tokens.Allowed), s.Tokens.Unclear)
	}

	// Conflicts were retried, and a retry after a conflict won seats.
	wonAfterConflict := 0
	for _, f := range r.Fans {
		if f.Conflicts > 0 && f.Holds > 0 {
			wonAfterConflict++
		}
	}
	if s.Steps[loadtest.StepHold].Outcomes["409"] == 0 || wonAfterConflict == 0 {
		t.Errorf("got holds %v and %d fans holding after a conflict, want conflicts and a retry that won",
			s.Steps[loadtest.StepHold].Outcomes, wonAfterConflict)
	}
	checkPayOutcomes(t, r)
	checkStore(t, p, r)
}

// testEveryPaymentBehaviour gives every fan room to hold (no contention) so that each payment behaviour is played
// to its end: ok; declined (402) then ok; slow (202, then polled to CONFIRMED); gateway error, then cancel;
// abandon.
func testEveryPaymentBehaviour(t *testing.T, c *client.Client, p *platformtest.Platform) {
	sc := queueScenario(15, 100)
	sc.HotShare, sc.GroupMin, sc.GroupMax, sc.ProbeShare = 0, 1, 2, 0

	r, err := Play(context.Background(), Config{Client: c, Scenario: sc, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	s := loadtest.Summarize(r, time.Second)
	t.Logf("outcomes %v; pay %v; poll %v; cancel %v", s.FanOutcomes, s.Steps[loadtest.StepPay].Outcomes,
		s.Steps[loadtest.StepPoll].Outcomes, s.Steps[loadtest.StepCancel].Outcomes)
	by := map[loadtest.PayBehaviour]int{}
	for _, f := range r.Fans {
		by[f.Pay]++
		if f.Holds != 1 {
			t.Errorf("fan %d: got %d holds (%s: %s), want 1: the hall has room for everyone", f.ID, f.Holds,
				f.Outcome, f.Detail)
		}
	}
	for b := range wantOutcome {
		if by[b] == 0 {
			t.Errorf("no fan paid %s (fans by behaviour %v): pick another seed", b, by)
		}
	}
	checkPayOutcomes(t, r)
	checkStore(t, p, r)

	// Each behaviour left its trace in the answers: a decline, a pending payment polled, a cancelled hold.
	pay := s.Steps[loadtest.StepPay].Outcomes
	if pay["200"] != by[loadtest.PayOK]+by[loadtest.PayDeclinedThenOK] || pay["402"] != by[loadtest.PayDeclinedThenOK] || pay["202"] != by[loadtest.PaySlow] {
		t.Errorf("got pay answers %v for fans by behaviour %v, want a 200 per ok and declined fan, a 402 per declined "+
			"fan, a 202 per slow fan", pay, by)
	}
	if s.Steps[loadtest.StepPoll].Count < by[loadtest.PaySlow] ||
		s.Steps[loadtest.StepCancel].Outcomes["200"] != by[loadtest.PayError] {
		t.Errorf("got %d polls and cancels %v, want the slow fans polling and every gateway-error fan cancelled",
			s.Steps[loadtest.StepPoll].Count, s.Steps[loadtest.StepCancel].Outcomes)
	}
}

// checkPayOutcomes checks that every fan who held seats ended where its payment behaviour must.
func checkPayOutcomes(t *testing.T, r *loadtest.Run) {
	t.Helper()
	for _, f := range r.Fans {
		if f.BookingID == "" {
			continue
		}
		if want := wantOutcome[f.Pay].outcome; f.Outcome != want {
			t.Errorf("fan %d paying %s: got outcome %s (%s), want %s", f.ID, f.Pay, f.Outcome, f.Detail, want)
		}
	}
}

// checkStore reads every booking the crowd made from the platform's database: the fan's record must be the truth,
// its booking in the state its outcome claims, with the seats it claims.
func checkStore(t *testing.T, p *platformtest.Platform, r *loadtest.Run) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	checked := 0
	for _, f := range r.Fans {
		if f.BookingID == "" {
			continue
		}
		var status, show string
		var seats []string
		err := conn.QueryRow(ctx, `SELECT status, show_id, seat_ids FROM bookings WHERE id = $1`, f.BookingID).
			Scan(&status, &show, &seats)
		if err != nil {
			t.Errorf("fan %d: booking %s: %v", f.ID, f.BookingID, err)
			continue
		}
		checked++
		slices.Sort(seats)
		mine := slices.Sorted(slices.Values(f.SeatIDs))
		if want := wantOutcome[f.Pay].status; status != want || show != r.ShowID || !slices.Equal(seats, mine) {
			t.Errorf("fan %d (%s, %s): got booking %s %s of show %s seats %v, want %s of %s seats %v", f.ID, f.Pay,
				f.Outcome, f.BookingID, status, show, seats, want, r.ShowID, mine)
		}
	}
	if checked == 0 {
		t.Errorf("no fan made a booking")
	}
}

func details(r *loadtest.Run, outcome string) []string {
	var out []string
	for _, f := range r.Fans {
		if f.Outcome == outcome && len(out) < 5 {
			out = append(out, fmt.Sprintf("fan %d (%s): %s", f.ID, f.Pay, f.Detail))
		}
	}
	return out
}

// TestHoldStorm storms the platform's hold API, once releasing every hold (the platform alone) and once against
// booking's row-lock baseline served by loadtest/baseline on the same database, as the command does.
//
// The edge lets each user ask once every four seconds here (burst 1), so that a storm client meets the limit with
// its second request (the release of a hold follows it at once) and is seen waiting out its 429s, holds and
// releases alike. Once a second was too generous on a loaded machine: a client whose hold took a second met no
// limit at all.
func TestHoldStorm(t *testing.T) {
	t.Parallel()
	c, p := start(t, map[string]string{"RATE_PER_USER": "0.25", "RATE_PER_USER_BURST": "1"})
	storm := func() loadtest.Scenario {
		sc := loadtest.Presets["hold-storm"]
		// Three seconds, not one: on a loaded machine a hold that succeeds (a PostgreSQL write) can take most of a
		// second, and a storm that ends first counts only the quick refusals.
		sc.Fans, sc.Seats, sc.StormDuration, sc.Duration = 20, 60, 3*time.Second, 30*time.Second
		return sc
	}

	t.Run("release", func(t *testing.T) {
		sc := storm()
		sc.Baseline, sc.Release = false, true
		r, err := Play(context.Background(), Config{Client: c, Scenario: sc, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		s := loadtest.Summarize(r, time.Second)
		holds := s.Steps[loadtest.StepHold].Outcomes
		if s.Storm == nil || !decided(holds) {
			t.Fatalf("got storm %+v, holds %v; want 201s and 409s and nothing else but 429s", s.Storm, holds)
		}
		// Every hold released, the edge's "not now" waited out.
		cancels := s.Steps[loadtest.StepCancel].Outcomes
		if cancels["200"] != holds["201"] || cancels["200"]+cancels["429"] != s.Steps[loadtest.StepCancel].Count {
			t.Errorf("got cancels %v after %d holds, want every hold released", cancels, holds["201"])
		}
		if holds["429"]+cancels["429"] == 0 {
			t.Errorf("got holds %v and cancels %v, want the edge's rate limit met (and waited out)", holds, cancels)
		}
		if s.Storm.Baseline != nil {
			t.Errorf("got a baseline storm without a baseline")
		}
	})

	t.Run("baseline", func(t *testing.T) {
		// Every client on the same two seats, and nothing released: at most two holds can succeed on either side,
		// and every decision after those is a 409, however few decisions a loaded machine lets through.
		sc := storm()
		sc.HotSeats, sc.HotShare = 2, 1
		ctx := context.Background()
		b, err := baseline.Start(ctx, baseline.Config{DatabaseURL: p.DatabaseURL, AuthSecret: p.AuthSecret,
			HoldTTL: p.Options.HoldTTL, MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		tr := client.NewTransport(64)
		defer tr.CloseIdleConnections()
		r, err := Play(ctx, Config{Client: c, Scenario: sc, Seed: 7, Baseline: b, Transport: tr})
		if err != nil {
			t.Fatal(err)
		}
		s := loadtest.Summarize(r, time.Second)
		if s.Storm == nil || s.Storm.Decisions == 0 || s.Storm.Baseline == nil || s.Storm.Baseline.Decisions == 0 {
			t.Fatalf("got storm %+v, want decisions on both sides", s.Storm)
		}
		for name, st := range map[string]*loadtest.Storm{"platform": s.Storm, "baseline": s.Storm.Baseline} {
			o := st.Outcomes
			if !answered(o) || o["201"] == 0 || o["201"] > sc.HotSeats {
				t.Errorf("%s: got outcomes %v, want 1 to %d seats granted, the rest refused (409), and nothing else but 429s",
					name, o, sc.HotSeats)
			}
		}
		// Neither side releases in a comparison: what the platform held stays held.
		if n := s.Steps[loadtest.StepCancel].Count; n != 0 {
			t.Errorf("got %d cancels, want none against a baseline that cannot release", n)
		}
	})
}

// decided reports a storm's hold answers as they must be: seats granted and seats refused, and nothing else but
// the edge's per-user rate limit (429, which the clients wait out): a storm client asks far more often than the
// edge lets one user ask, by design.
func decided(outcomes map[string]int) bool {
	return answered(outcomes) && outcomes["201"] > 0 && outcomes["409"] > 0
}

// answered reports whether every hold answer is a grant (201), a refusal (409) or the edge's rate limit (429).
func answered(outcomes map[string]int) bool {
	for o := range outcomes {
		if o != "201" && o != "409" && o != "429" {
			return false
		}
	}
	return true
}

func testPlayAgainstAnExistingShow(t *testing.T, c *client.Client, _ *platformtest.Platform) {
	sc := queueScenario(10, 60) // at most 6 seats a fan: never sold out, so every fan is admitted
	// Long enough that the sale still opens after Play starts on a busy machine: setting up asks the platform more.
	sc.SaleDelay, sc.Pay = 3*time.Second, loadtest.PayMix{OK: 1}
	show, _, err := Setup(context.Background(), c, sc, fmt.Sprint("existing-", time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Play(context.Background(), Config{Client: c, Scenario: sc, ShowID: show, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if r.ShowID != show || r.SaleOpens <= 0 {
		t.Fatalf("got show %s opening at +%s, want %s opening after the start", r.ShowID, r.SaleOpens, show)
	}
	if s := loadtest.Summarize(r, time.Second); s.Admitted != sc.Fans {
		t.Errorf("got %d admitted, want all %d; outcomes %v", s.Admitted, sc.Fans, s.FanOutcomes)
	}
}

// testConflictRetriedWithAlternatives makes two hot fans reach for the same best pair at the same moment: the
// hold requests of both are held back on the fans' side until both are on their way (the platform is untouched;
// only the moment the requests leave is chosen). One wins; the other must be refused with alternatives and hold
// exactly those next.
func testConflictRetriedWithAlternatives(t *testing.T, _ *client.Client, p *platformtest.Platform) {
	spy := &holdSpy{gate: make(chan struct{}), first: map[string]bool{}}
	sc := queueScenario(2, 40)
	sc.HotShare, sc.GroupMin, sc.GroupMax, sc.ProbeShare, sc.Pay = 1, 2, 2, 0, loadtest.PayMix{OK: 1}
	r := playThrough(t, p, func(tr http.RoundTripper) http.RoundTripper { spy.next = tr; return spy }, sc, 5)
	spy.mu.Lock()
	holds := spy.holds
	spy.mu.Unlock()
	for _, h := range holds {
		t.Logf("%s: seats %v -> %d alternatives %v", h.user[len(h.user)-8:], h.seats, h.status, h.alternatives)
	}
	// Per fan, in order: the loser's first hold is a 409 offering alternatives, and its next hold asks for them.
	byUser := map[string][]spiedHold{}
	for _, h := range holds {
		byUser[h.user] = append(byUser[h.user], h)
	}
	retried := 0
	for _, hs := range byUser {
		if len(hs) < 2 || hs[0].status != http.StatusConflict {
			continue
		}
		if len(hs[0].alternatives) == 0 || !slices.Equal(hs[1].seats, hs[0].alternatives) || hs[1].status != http.StatusCreated {
			t.Errorf("got a 409 offering %v, then a hold of %v answered %d; want the alternatives held",
				hs[0].alternatives, hs[1].seats, hs[1].status)
		}
		retried++
	}
	if len(byUser) != 2 || retried != 1 {
		t.Errorf("got %d fans holding, %d retrying after a conflict; want two fans colliding and one retrying", len(byUser), retried)
	}
	if s := loadtest.Summarize(r, time.Second); s.Confirmed != 2 {
		t.Errorf("got outcomes %v, want both fans confirmed", s.FanOutcomes)
	}
	checkStore(t, p, r)
}

// testLostHoldAnswer: a fan's hold is made but both answers to it (the second try carries the same key) are lost
// on the way back. The fan chooses again; booking refuses the second hold (a fan may hold at most 10 seats, and
// each hold is 6), so the fan looks at its bookings, finds the first hold and pays it.
func testLostHoldAnswer(t *testing.T, _ *client.Client, p *platformtest.Platform) {
	lose := &answerLoser{left: 2}
	sc := queueScenario(1, 40)
	sc.HotShare, sc.GroupMin, sc.GroupMax, sc.ProbeShare, sc.Pay = 0, 6, 6, 0, loadtest.PayMix{OK: 1}
	r := playThrough(t, p, func(tr http.RoundTripper) http.RoundTripper { lose.next = tr; return lose }, sc, 7)
	lose.mu.Lock()
	lost, statuses := lose.lost, lose.statuses
	lose.mu.Unlock()
	if lost != 2 || !slices.Contains(statuses, http.StatusUnprocessableEntity) {
		t.Fatalf("lost %d answers, hold answers after them %v: want 2 lost, then a 422", lost, statuses)
	}
	f := r.Fans[0]
	if f.Outcome != loadtest.OutcomeConfirmed || len(f.SeatIDs) != 6 {
		t.Errorf("the fan ended %s (%s) with seats %v, want its first hold of 6 confirmed", f.Outcome, f.Detail, f.SeatIDs)
	}
	checkStore(t, p, r)
}

// testGatewayTimeoutOnHold: a fan's hold is made but answered 504 twice, as a proxy whose upstream was slow would
// answer. The fan waits and asks for the same seats under the same key, and booking answers with the hold it made.
func testGatewayTimeoutOnHold(t *testing.T, _ *client.Client, p *platformtest.Platform) {
	lose := &answerLoser{left: 2, as: http.StatusGatewayTimeout}
	sc := queueScenario(1, 40)
	sc.HotShare, sc.GroupMin, sc.GroupMax, sc.ProbeShare, sc.Pay = 0, 6, 6, 0, loadtest.PayMix{OK: 1}
	r := playThrough(t, p, func(tr http.RoundTripper) http.RoundTripper { lose.next = tr; return lose }, sc, 7)
	lose.mu.Lock()
	statuses := lose.statuses
	lose.mu.Unlock()
	if !slices.Equal(statuses, []int{http.StatusCreated}) {
		t.Errorf("hold answers after the two 504s: %v, want the one hold made, answered 201", statuses)
	}
	if f := r.Fans[0]; f.Outcome != loadtest.OutcomeConfirmed || len(f.SeatIDs) != 6 {
		t.Errorf("the fan ended %s (%s) with seats %v, want its hold of 6 confirmed", f.Outcome, f.Detail, f.SeatIDs)
	}
	checkStore(t, p, r)
}

// answerLoser passes every request on, and loses the answers to the first left holds: the platform acted on
// them, the fan hears only that the connection failed, or the status as, when set. It records the status of every hold answer it passes.
type answerLoser struct {
	next http.RoundTripper

	as int

	mu       sync.Mutex
	left     int
	lost     int
	statuses []int
}

func (l *answerLoser) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := l.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost || req.URL.Path != "/api/v1/bookings/hold" {
		return res, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.left > 0 {
		l.left--
		l.lost++
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if l.as != 0 {
			return &http.Response{StatusCode: l.as, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
		}
		return nil, errors.New("connection reset by peer (the test lost the answer)")
	}
	l.statuses = append(l.statuses, res.StatusCode)
	return res, nil
}

// playThrough plays sc against p with the fans' requests passed through the RoundTripper wrap makes of their
// transport.
func playThrough(t *testing.T, p *platformtest.Platform, wrap func(http.RoundTripper) http.RoundTripper,
	sc loadtest.Scenario, seed uint64) *loadtest.Run {
	t.Helper()
	tr := client.NewTransport(16)
	t.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(p.BaseURL, wrap(tr), client.Options{AdminToken: p.AdminToken, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Play(context.Background(), Config{Client: c, Scenario: sc, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// holdSpy sits between the fans and the platform: it keeps each fan's first hold request until two are waiting
// (or a few seconds passed), so that they reach the platform together, and records every hold and its answer.
type holdSpy struct {
	next http.RoundTripper

	mu    sync.Mutex
	first map[string]bool // users whose first hold went out
	gate  chan struct{}   // closed once two first holds wait
	holds []spiedHold
}

type spiedHold struct {
	user         string
	seats        []string
	status       int
	alternatives []string
}

func (s *holdSpy) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.URL.Path != "/api/v1/bookings/hold" {
		return s.next.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	var in struct {
		SeatIDs []string `json:"seatIds"`
	}
	_ = json.Unmarshal(body, &in)
	user := req.Header.Get("Authorization")

	s.mu.Lock()
	firstOfUser := !s.first[user]
	s.first[user] = true
	if firstOfUser && len(s.first) == 2 {
		close(s.gate)
	}
	s.mu.Unlock()
	if firstOfUser {
		select {
		case <-s.gate:
		case <-time.After(5 * time.Second):
		case <-req.Context().Done():
		}
	}

	res, err := s.next.RoundTrip(req)
	h := spiedHold{user: user, seats: in.SeatIDs}
	if err == nil {
		h.status = res.StatusCode
		out, rerr := io.ReadAll(res.Body)
		res.Body.Close()
		res.Body = io.NopCloser(bytes.NewReader(out))
		if rerr != nil {
			return nil, rerr
		}
		var p struct {
			Alternatives []string `json:"alternatives"`
		}
		_ = json.Unmarshal(out, &p)
		h.alternatives = p.Alternatives
	}
	s.mu.Lock()
	s.holds = append(s.holds, h)
	s.mu.Unlock()
	return res, err
}
