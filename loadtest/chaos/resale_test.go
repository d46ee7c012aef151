package chaos_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking/payment/sim"
	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/crowd"
)

// The exchange in the storm: a reseller plays the face-value exchange on a queued show of its own while the faults
// are injected. Sellers, fans who booked and paid through the queue, list their tickets at or below the cap their
// booking's resale view gives (one also above it, which must be refused 422 price-above-cap), and some withdraw a
// listing and list it again cheaper. Fresh fans, through the queue and admitted, buy listings and pay them with a
// mix of cards that declines and fails at the gateway. They retry "not now" as a browser would: a payment with its
// idempotency key, a purchase (which takes none) after reading back their bookings. Every answer is kept, for the
// report and the run's "never a 500"; the money is judged with the rest of the run, by the store checker
// (resold-once: one payout per sale, a refund of the seller's payment) and the gateway's ledger.

// resaleSettings size the exchange.
type resaleSettings struct {
	sellers, seatsEach int           // sellers, and the seats each books and then lists one after another
	buyers             int           // buyers at once: each buys one listing, then a fresh fan takes its place
	listEvery          time.Duration // a seller's pace between listings, so that listings last the storm
	minSold            int           // listings SOLD with their payout settled, at least
}

var (
	resaleShort = resaleSettings{sellers: 4, seatsEach: 5, buyers: 4, listEvery: 2 * time.Second, minSold: 3}
	resaleFull  = resaleSettings{sellers: 8, seatsEach: 5, buyers: 5, listEvery: 4 * time.Second, minSold: 10}
	// resalePolicy is the exchange's show's: at most 90% of face value, 10% kept as a fee.
	resalePolicy = client.ResalePolicy{Enabled: true, MaxPriceRatio: 0.9, FeePercent: 10}
	// buyerPay is how buyers pay: declines, gateway errors (the buyer gives up and cancels) and slow cards
	// settled by booking's recovery worker among the approvals.
	buyerPay = loadtest.PayMix{OK: 60, DeclinedThenOK: 15, Slow: 10, Error: 15}
)

// exchangeAttempts are the calls that count as trading: a listing or a purchase tried.
var exchangeAttempts = map[string]bool{"list": true, "list above the cap": true, "withdraw": true, "buy": true}

// exchange is the reseller actor.
type exchange struct {
	c       *client.Client
	show    string
	set     resaleSettings
	closing chan struct{} // closed: no new listing nor purchase
	wg      sync.WaitGroup
	booked  sync.WaitGroup // the sellers' journeys to their tickets

	mu       sync.Mutex
	calls    []resaleCall
	problems []string // answers the contract does not allow
	n        resaleCounts
}

type resaleCall struct {
	what         string
	began, ended time.Time
	outcome      string
}

// resaleCounts are what the fans on the exchange got.
type resaleCounts struct {
	sellers, listed, aboveCap, withdrawn, withdrawHeld, buyers, held, lostRace, lostAnswer int
	confirmed, declined, gaveUp, expired, refusedAtPay                                     int
}

// setupExchange creates the exchange's show, queued as the crowd's is but admitting at once, with the exchange on.
func setupExchange(ctx context.Context, t *testing.T, c *client.Client, sc loadtest.Scenario, runID string) (string, time.Time) {
	t.Helper()
	// Its fans solve a smaller proof of work to join than the crowd's: each buyer is a fresh fan.
	sc.Seats, sc.AdmitPerSecond, sc.MaxActive, sc.SaleDelay, sc.BotDifficulty = 40, 100, 1000, 0, 1_000
	show, opens, err := crowd.Setup(ctx, c, sc, runID+"-resale")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetResalePolicy(ctx, show, resalePolicy); err != nil {
		t.Fatal(err)
	}
	return show, opens
}

// startExchange starts the sellers and buyers once the show's sale opens.
func startExchange(ctx context.Context, c *client.Client, show string, opens time.Time, set resaleSettings) *exchange {
	x := &exchange{c: c, show: show, set: set, closing: make(chan struct{})}
	x.booked.Add(set.sellers)
	for i := range set.sellers {
		x.wg.Go(func() { sleepUntil(ctx, opens); x.seller(ctx, i) })
	}
	for i := range set.buyers {
		x.wg.Go(func() {
			sleepUntil(ctx, opens)
			rng := rand.New(rand.NewPCG(uint64(i), 37))
			for !x.closed() && ctx.Err() == nil {
				x.buy(ctx, rng)
			}
		})
	}
	return x
}

// awaitSellers waits, at most within, for the sellers to have booked the tickets they will list, so that the
// exchange has listings when the storm begins however slow the machine is.
func (x *exchange) awaitSellers(within time.Duration) {
	done := make(chan struct{})
	go func() { x.booked.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(within):
	}
}

// stop ends the trading and waits for the purchases under way to settle.
func (x *exchange) stop() { close(x.closing); x.wg.Wait() }

func (x *exchange) closed() bool {
	select {
	case <-x.closing:
		return true
	default:
		return false
	}
}

func sleepUntil(ctx context.Context, t time.Time) {
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(t)):
	}
}

func (x *exchange) observe(what string, began time.Time, res client.Result, err error) {
	x.mu.Lock()
	x.calls = append(x.calls, resaleCall{what, began, time.Now(), client.Outcome(res, err)})
	x.mu.Unlock()
}

func (x *exchange) problem(format string, args ...any) {
	x.mu.Lock()
	x.problems = append(x.problems, fmt.Sprintf(format, args...))
	x.mu.Unlock()
}

func (x *exchange) count(f func(*resaleCounts)) { x.mu.Lock(); f(&x.n); x.mu.Unlock() }

// seller books seatsEach seats of its own share of the hall and lists them one after another, at the cap and
// below it; seller 0 first tries above the cap, and every third listing is withdrawn at once and listed again
// later, cheaper.
func (x *exchange) seller(ctx context.Context, i int) {
	mine := func(m client.SeatMap) []string {
		var seats []string
		for k, s := range m.Seats {
			if s.Status == "AVAILABLE" && k%x.set.sellers == i && len(seats) < x.set.seatsEach {
				seats = append(seats, s.SeatID)
			}
		}
		return seats
	}
	// A minute: a hold whose request booking's kill cut off keeps its key for 30 s before a retry takes it over.
	// A hold that lapsed while booking was down (410 at pay) is made again, by the seller as a fresh fan.
	j := journey(ctx, x.c, x.show, mine, time.Minute, x.observe)
	for try := 1; try < 3 && j.err != nil && !x.closed(); try++ {
		j = journey(ctx, x.c, x.show, mine, time.Minute, x.observe)
	}
	x.booked.Done()
	if j.err != nil {
		x.problem("seller %d could not book: %v", i, j.err)
		return
	}
	x.count(func(n *resaleCounts) { n.sellers++ })
	var v client.ResaleView
	if _, err := retry(ctx, x.observe, "resale view", 200, func() (res client.Result, err error) {
		v, res, err = x.c.ResaleView(ctx, j.user, j.booking)
		return
	}); err != nil || !v.Open {
		x.problem("seller %d's resale view: open %v, %v", i, v.Open, err)
		return
	}
	caps := map[string]int64{}
	for _, s := range v.Seats {
		caps[s.SeatID] = s.Cap
	}
	queue := j.paid.Tickets
	if len(queue) == 0 {
		var b client.Booking
		if _, err := retry(ctx, x.observe, "booking", 200, func() (res client.Result, err error) {
			b, res, err = x.c.Booking(ctx, j.user, "", j.booking)
			return
		}); err != nil {
			x.problem("seller %d's booking: %v", i, err)
			return
		}
		queue = b.Tickets
	}
	relisted := map[string]bool{}
	for k := 0; k < len(queue) && !x.closed(); k++ {
		tk := queue[k]
		if i == 0 && k == 0 {
			res, _ := retry(ctx, x.observe, "list above the cap", 422, func() (res client.Result, err error) {
				_, res, err = x.c.ListTicket(ctx, j.user, tk.TicketID, caps[tk.SeatID]+1)
				return
			})
			if res.ProblemSlug() != "price-above-cap" {
				x.problem("listing ticket %s above its cap %d answered %d %s, want 422 price-above-cap", tk.TicketID,
					caps[tk.SeatID], res.Status, res.ProblemSlug())
			} else {
				x.count(func(n *resaleCounts) { n.aboveCap++ })
			}
		}
		price := caps[tk.SeatID] - int64(k)*500
		if !x.list(ctx, j.user, tk, price) {
			continue
		}
		if k%3 == 1 && !relisted[tk.TicketID] && x.withdraw(ctx, j.user, tk) {
			relisted[tk.TicketID] = true
			queue = append(queue, tk)
		}
		select {
		case <-x.closing:
		case <-time.After(x.set.listEvery):
		}
	}
}

// list puts a ticket on the exchange. The route takes no idempotency key: after a lost answer the listing may
// have been made, and asking again then answers 409 ticket-listed.
func (x *exchange) list(ctx context.Context, user string, tk client.Ticket, price int64) bool {
	res, err := retry(ctx, x.observe, "list", 201, func() (res client.Result, err error) {
		_, res, err = x.c.ListTicket(ctx, user, tk.TicketID, price)
		return
	})
	if err != nil && !(res.Status == http.StatusConflict && res.ProblemSlug() == "ticket-listed") {
		x.problem("listing ticket %s at %d: %v", tk.TicketID, price, err)
		return false
	}
	x.count(func(n *resaleCounts) { n.listed++ })
	return true
}

// withdraw takes a listing back, and says whether it was: not while a buyer holds it (409 listing-held), nor
// once it sold (404).
func (x *exchange) withdraw(ctx context.Context, user string, tk client.Ticket) bool {
	res, err := retry(ctx, x.observe, "withdraw", 200, func() (res client.Result, err error) {
		_, res, err = x.c.WithdrawListing(ctx, user, tk.TicketID)
		return
	})
	switch {
	case err == nil:
		x.count(func(n *resaleCounts) { n.withdrawn++ })
		return true
	case res.Status == http.StatusConflict && res.ProblemSlug() == "listing-held":
		x.count(func(n *resaleCounts) { n.withdrawHeld++ })
	case res.Status != http.StatusNotFound:
		x.problem("withdrawing ticket %s: %v", tk.TicketID, err)
	}
	return false
}

// buy is one fresh fan's purchase: admitted through the queue, it buys one of the listings and pays as the mix
// says.
func (x *exchange) buy(ctx context.Context, rng *rand.Rand) {
	ctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	var f newFanResult
	if err := admit(ctx, x.c, x.show, x.observe, &f); err != nil {
		x.problem("a buyer could not get in: %v", err)
		return
	}
	x.count(func(n *resaleCounts) { n.buyers++ })
	var b client.Booking
	for b.BookingID == "" {
		if x.closed() || ctx.Err() != nil {
			return
		}
		var offers []client.Offer
		if _, err := retry(ctx, x.observe, "listings", 200, func() (res client.Result, err error) {
			offers, res, err = x.c.Listings(ctx, x.show)
			return
		}); err != nil || len(offers) == 0 {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		o := offers[rng.IntN(len(offers))]
		began := time.Now()
		held, res, err := x.c.BuyListing(ctx, f.user, f.adm, o.ListingID)
		x.observe("buy", began, res, err)
		switch {
		case res.Status == http.StatusCreated:
			b = held
		case res.Status == http.StatusConflict && res.ProblemSlug() == "seats-unavailable":
			// Another buyer holds it (the public list still shows a listing while its buyer pays) or bought it.
			x.count(func(n *resaleCounts) { n.lostRace++ })
			time.Sleep(200 * time.Millisecond)
		case res.Status == 0 || res.Status == http.StatusBadGateway || res.Status == http.StatusGatewayTimeout:
			// The answer was lost, and the route takes no idempotency key: the hold may have been made. The
			// fan's bookings say.
			x.count(func(n *resaleCounts) { n.lostAnswer++ })
			b = x.heldOf(ctx, f.user, o.SeatID)
		case res.Status == 429 || res.Status >= 500:
			time.Sleep(100 * time.Millisecond)
		default:
			detail := ""
			if res.Problem != nil {
				detail = res.Problem.Detail
			}
			x.problem("buying listing %s answered %s %s (%s)", o.ListingID, client.Outcome(res, err), res.ProblemSlug(),
				detail)
			return
		}
	}
	x.count(func(n *resaleCounts) { n.held++ })
	x.pay(ctx, f, b, buyerPay.Pick(rng.Float64()))
}

// heldOf is the fan's HELD booking of seat on the exchange's show, if there is one.
func (x *exchange) heldOf(ctx context.Context, user, seat string) client.Booking {
	var mine []client.Booking
	if _, err := retry(ctx, x.observe, "my bookings", 200, func() (res client.Result, err error) {
		mine, res, err = x.c.Mine(ctx, user)
		return
	}); err != nil {
		return client.Booking{}
	}
	for _, b := range mine {
		if b.ShowID == x.show && b.Status == "HELD" && len(b.SeatIDs) == 1 && b.SeatIDs[0] == seat {
			return b
		}
	}
	return client.Booking{}
}

// pay pays a held purchase as behaviour says and follows it to its end.
func (x *exchange) pay(ctx context.Context, f newFanResult, b client.Booking, behaviour loadtest.PayBehaviour) {
	status := 0
	switch behaviour {
	case loadtest.PayDeclinedThenOK:
		if status = x.payWith(ctx, f, b, sim.CardDeclined, 8); status == http.StatusPaymentRequired {
			x.count(func(n *resaleCounts) { n.declined++ })
			status = x.payWith(ctx, f, b, sim.CardOK, 8)
		}
	case loadtest.PaySlow:
		status = x.payWith(ctx, f, b, sim.CardSlow, 8)
	case loadtest.PayError:
		if status = x.payWith(ctx, f, b, sim.CardError, 3); status != http.StatusOK && status != http.StatusAccepted {
			// The fan gives up on the broken card and lets the seat go back to the exchange.
			res, err := retry(ctx, x.observe, "cancel", 200, func() (client.Result, error) {
				return x.c.Cancel(ctx, f.user, f.adm, b.BookingID)
			})
			if err != nil && res.Status != http.StatusGone {
				x.problem("cancelling booking %s after %s: %v", b.BookingID, sim.CardError, err)
			}
			x.count(func(n *resaleCounts) { n.gaveUp++ })
			return
		}
	default:
		status = x.payWith(ctx, f, b, sim.CardOK, 8)
	}
	switch status {
	case http.StatusOK, http.StatusAccepted:
		x.follow(ctx, f, b.BookingID)
	case http.StatusGone:
		x.count(func(n *resaleCounts) { n.expired++ })
	case http.StatusConflict:
		// seats-unavailable: the sale's transaction found the listing sold to another buyer, whose hold Redis
		// had forgotten (killed) when this one claimed the seat, and the payment was voided. PostgreSQL decides.
		x.count(func(n *resaleCounts) { n.refusedAtPay++ })
	default:
		x.problem("paying booking %s (%s) answered %d", b.BookingID, behaviour, status)
	}
}

// payWith is one payment with one idempotency key, asked again (at most tries times) while the answer is "not
// now" or lost; 409 in-progress is an earlier try still settling, followed as a 202 is.
func (x *exchange) payWith(ctx context.Context, f newFanResult, b client.Booking, method string, tries int) int {
	key := fmt.Sprintf("resale-%s-%s", b.BookingID, method)
	var res client.Result
	for try := 0; try < tries && ctx.Err() == nil; try++ {
		if try > 0 {
			time.Sleep(200 * time.Millisecond << min(try, 3))
		}
		began := time.Now()
		var err error
		_, res, err = x.c.Pay(ctx, f.user, f.adm, b.BookingID, method, key)
		x.observe("pay", began, res, err)
		switch {
		case res.Status == http.StatusConflict && res.ProblemSlug() == "in-progress":
			return http.StatusAccepted
		case res.Status != 0 && res.Status != 429 && res.Status < 500:
			return res.Status
		}
	}
	return res.Status
}

// follow reads a paid purchase until it is CONFIRMED (or the payment failed after all).
func (x *exchange) follow(ctx context.Context, f newFanResult, id string) {
	for ctx.Err() == nil {
		var b client.Booking
		_, err := retry(ctx, x.observe, "booking", 200, func() (res client.Result, err error) {
			b, res, err = x.c.Booking(ctx, f.user, "", id)
			return
		})
		switch {
		case err != nil:
			x.problem("reading purchase %s: %v", id, err)
			return
		case b.Status == "CONFIRMED":
			x.count(func(n *resaleCounts) { n.confirmed++ })
			return
		case b.Status != "HELD" && b.Status != "PAYMENT_PENDING":
			x.count(func(n *resaleCounts) { n.expired++ })
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	x.problem("purchase %s was still not settled when the buyer gave up", id)
}
