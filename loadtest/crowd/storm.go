package crowd

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/loadtest/client"
)

// platformHolder storms the platform's own hold API (queue off, so no admission token). Without idemKeys it sends
// no Idempotency-Key, like the baseline's clients (the classic design has none): a key costs booking a Postgres
// write per request, 409s included, and the comparison is about deciding holds.
type platformHolder struct {
	c       *client.Client
	idemKey bool
}

func (h platformHolder) Hold(ctx context.Context, user, showID string, seatIDs []string) (string, client.Result, error) {
	key := ""
	if h.idemKey {
		key = uuid.NewString()
	}
	b, res, err := h.c.Hold(ctx, user, "", showID, seatIDs, key)
	return b.BookingID, res, err
}

func (h platformHolder) Release(ctx context.Context, user, _, bookingID string) (client.Result, error) {
	return h.c.Cancel(ctx, user, "", bookingID)
}

// seatMap reads the storm show's seats; the queue is off, so no admission is needed.
func (cr *Crowd) seatMap(ctx context.Context) ([]client.Seat, error) {
	m, res, err := cr.c.Seats(ctx, "", "", cr.showID)
	if err != nil || res.Status != http.StatusOK || len(m.Seats) == 0 {
		return nil, fmt.Errorf("hold-storm: cannot read the seat map: status %d: %v", res.Status, err)
	}
	return m.Seats, nil
}

// storm gives every client an identity, waits for the sale to open, then lets all of them hammer holds on the
// show for StormDuration: hot clients on the HotSeats best seats, the rest anywhere. With Release, each hold is
// cancelled at once so the seats keep cycling.
func (cr *Crowd) storm(ctx context.Context, seed uint64, opens time.Time, h Holder, seats []client.Seat) []*loadtest.Fan {
	sc := cr.sc
	all := make([]string, len(seats))
	for i, s := range seats {
		all[i] = s.SeatID
	}
	hot := HotSeats(seats, sc.HotSeats)

	fans := make([]*loadtest.Fan, sc.Fans)
	users := make([]string, sc.Fans)
	// Identities first, at most 64 at a time, so the storm itself measures holds and nothing else.
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for i := range fans {
		fans[i] = &loadtest.Fan{ID: i, Pay: loadtest.PayAbandon}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			for try := 0; try < 20 && ctx.Err() == nil; try++ {
				began := time.Now()
				g, res, err := cr.c.NewGuest(ctx)
				cr.rec.Observe(loadtest.StepAuth, began, client.Outcome(res, err))
				if res.Status == http.StatusCreated {
					users[i], fans[i].UserID = g.Token, g.UserID
					return
				}
				wait(ctx, res.RetryAfter)
			}
		}()
	}
	wg.Wait()

	from := time.Now()
	if opens.After(from) {
		from = opens
	}
	to := from.Add(sc.StormDuration)
	cr.stormWindow = [2]time.Duration{cr.rec.Since(from), cr.rec.Since(to)}
	master := rand.New(rand.NewPCG(seed, seed^0x51ed270b27a1e1f5))
	for i, f := range fans {
		if users[i] == "" {
			f.Outcome, f.Detail = loadtest.OutcomeError, "no guest identity"
			continue
		}
		rng := rand.New(rand.NewPCG(master.Uint64(), master.Uint64()))
		wg.Add(1)
		go func() {
			defer wg.Done()
			cr.hammer(ctx, h, f, users[i], rng, from, to, all, hot)
		}()
	}
	wg.Wait()
	return fans
}

func (cr *Crowd) hammer(ctx context.Context, h Holder, f *loadtest.Fan, user string, rng *rand.Rand,
	from, to time.Time, all, hot []string) {
	sc := cr.sc
	if !wait(ctx, time.Until(from)) && time.Until(from) > 0 {
		f.Outcome = loadtest.OutcomeCutOff
		return
	}
	ctx, cancel := context.WithDeadline(ctx, to)
	defer cancel()
	for ctx.Err() == nil {
		n := sc.GroupMin + rng.IntN(sc.GroupMax-sc.GroupMin+1)
		pool := all
		if rng.Float64() < sc.HotShare {
			pool = hot
		}
		seats := sample(pool, n, rng)
		began := time.Now()
		id, res, err := h.Hold(ctx, user, cr.showID, seats)
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			break // cut by the storm's end: not a decision
		}
		cr.rec.Observe(loadtest.StepHold, began, client.Outcome(res, err))
		switch {
		case res.Status == http.StatusCreated:
			f.Holds++
			if sc.Release && id != "" && !cr.noRelease {
				// Released with a context of its own, and asked again while the platform says "not now" (the
				// edge's per-user limit, which a storm client keeps hitting): a hold left behind would skew the
				// baseline that runs next.
				rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				for {
					began := time.Now()
					res, err := h.Release(rctx, user, cr.showID, id)
					cr.rec.Observe(loadtest.StepCancel, began, client.Outcome(res, err))
					if !busy(res) || !wait(rctx, res.RetryAfter) {
						break
					}
				}
				rcancel()
			}
		case res.Status == http.StatusConflict:
			f.Conflicts++
		case busy(res):
			wait(ctx, res.RetryAfter)
		}
	}
	f.Outcome = loadtest.OutcomeStormDone
}

// playBaseline plays the same hold-storm against the row-lock baseline: a show with the platform show's seats, the
// same clients (their guest identities), seats, shares and duration, so the two runs differ only in how a hold is
// decided. The baseline cannot cancel a hold, so neither side releases in a comparison (see Play).
func playBaseline(ctx context.Context, cfg Config, seats []client.Seat) (*loadtest.Run, error) {
	sc := cfg.Scenario
	bc, err := client.New(cfg.Baseline.URL(), cfg.Transport, client.Options{})
	if err != nil {
		return nil, err
	}
	showID, err := cfg.Baseline.NewShow(ctx, seats)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	rec := loadtest.NewRecorder(start)
	cr := &Crowd{c: cfg.Client, sc: sc, showID: showID, rec: rec, runCtx: ctx, log: cfg.Log, noRelease: true}
	run := &loadtest.Run{Scenario: sc, Target: cfg.Baseline.URL(), ShowID: showID, StartedAt: start}
	run.Fans = cr.storm(ctx, cfg.Seed+1, start, rowLock{bc}, seats)
	run.Steps = rec.Samples()
	run.Elapsed = time.Since(start)
	run.StormFrom, run.StormTo = cr.stormWindow[0], cr.stormWindow[1]
	return run, nil
}
