package booking

import (
	"context"
	"errors"
	"slices"
	"time"
)

// Waitlist offers.
//
// When seats come back (a hold expired or was cancelled, a booking was refunded), the waitlist's consumer of the
// event stream runs Offer for the show. Holding the show's offer lock (one replica at a time), it looks at the
// free seats and the line, and offers seats to the first entry that fits, by taking a real hold for that fan:
// the same claim (hold.lua), fencing and ledger row as any hold, only with the offer's TTL. It repeats until
// nothing more fits.
//
// Fairness, FIFO and group-aware: the line is walked oldest first. An entry whose group does not fit the free
// seats is passed over and the next one is considered, so a single seat coming back goes to the first single in
// line rather than sitting idle behind a group of four. But every offer made past an entry counts against it, and
// an entry passed over PassLimit times blocks the line: no entry behind it gets an offer until enough seats are
// free at once for its group. A group is therefore passed over at most PassLimit times, never forever.
//
// Seats: of the category the entry asked for (any category when it asked for none), adjacent in one row when a
// run is free, else the free seats nearest the front.
//
// The offer's hold races fresh holds for the same seats like any two holds do: hold.lua gives each seat to
// exactly one; an offer that loses is simply not made, and the next pass looks again.

// offerRounds bounds the offers one call makes, so a call always ends.
const offerRounds = 64

// Offer makes every offer the show's free seats allow now. It returns the offers made.
func (w *Waitlist) Offer(ctx context.Context, showID string) ([]WaitlistEntry, error) {
	// Most shows whose seats come back have nobody waiting: find out before taking the lock (a connection and a
	// round trip of its own). Under the lock the line is read again.
	if line, err := w.store.InLine(ctx, showID); err != nil || len(line) == 0 {
		return nil, err
	}
	unlock, err := w.store.LockOffers(ctx, showID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	layout, err := w.catalog.Layout(ctx, showID)
	if err != nil {
		return nil, err
	}
	var made []WaitlistEntry
	conflicts := 0
	for range offerRounds {
		line, err := w.store.InLine(ctx, showID)
		if err != nil || len(line) == 0 {
			return made, err
		}
		held, sold, err := w.catalog.status(ctx, showID, layout)
		if err != nil {
			return made, err
		}
		free := func(i int) bool { id := layout[i].ID; return !held[id] && !sold[id] }
		at, seats := chooseOffer(line, layout, free, w.cfg.PassLimit)
		if at < 0 {
			return made, nil
		}
		e := line[at]
		b, err := w.holds.HoldOffer(ctx, e.UserID, showID, seats, w.cfg.OfferTTL, e.Language)
		switch {
		case IsConflict(err):
			// A fresh hold took a seat between the read and the claim, or this process's seat snapshot has not
			// heard yet that it came back (it refuses for at most alternativesMaxAge): look again shortly, a few
			// times; the next event or the sweep tries after that.
			if conflicts++; conflicts > 5 {
				return made, nil
			}
			select {
			case <-ctx.Done():
				return made, ctx.Err()
			case <-time.After(time.Duration(conflicts) * alternativesMaxAge / 2):
			}
			continue
		case errors.Is(err, ErrTooManySeats), errors.Is(err, ErrSaleNotOpen):
			// The fan holds other seats of the show up to the cap, or the sale ended: no offer now.
			return made, nil
		case err != nil:
			return made, err
		}
		passed := make([]int64, at)
		for i := range at {
			passed[i] = line[i].ID
		}
		ok, err := w.store.RecordOffer(ctx, e.ID, b, passed)
		if err != nil || !ok {
			// Not recorded (the fan left meanwhile, or the store failed): give the seats back at once.
			if _, _, cerr := w.holds.Cancel(context.WithoutCancel(ctx), b.ID, b.UserID); cerr != nil {
				w.log.WarnContext(ctx, "waitlist: cancel an unrecorded offer", "booking", b.ID, "err", cerr)
			}
			if err != nil {
				return made, err
			}
			continue
		}
		e.Status, e.Offer = WaitlistOffered, &WaitlistOffer{BookingID: b.ID, SeatIDs: b.SeatIDs, ExpiresAt: b.ExpiresAt}
		made = append(made, e)
		if w.cfg.OnOffer != nil {
			w.cfg.OnOffer()
		}
		w.log.InfoContext(ctx, "waitlist offer", "show", showID, "entry", e.ID, "booking", b.ID, "seats", len(seats))
		w.signal(ctx, showID, e.UserID)
	}
	return made, nil
}

// offerListing offers a ticket just listed on the exchange (resale.go) to the show's line, as a seat coming back
// is offered: under the show's offer lock, to the first entry that fits (one seat, of the listing's category or
// any), no entry overtaking one passed over PassLimit times, by a real hold for that fan with the offer's TTL, at
// the listing's price. attach records the hold as the listing's before the offer is recorded. ok is false when
// nobody in line fits: the listing is then the public's at once.
func (w *Waitlist) offerListing(ctx context.Context, l Listing, attach func(context.Context, Booking) error) (Booking, bool, error) {
	if line, err := w.store.InLine(ctx, l.ShowID); err != nil || len(line) == 0 {
		return Booking{}, false, err
	}
	unlock, err := w.store.LockOffers(ctx, l.ShowID)
	if err != nil {
		return Booking{}, false, err
	}
	defer unlock()
	line, err := w.store.InLine(ctx, l.ShowID)
	if err != nil {
		return Booking{}, false, err
	}
	seat := []Seat{{ID: l.SeatID, Category: l.Category}}
	at, _ := chooseOffer(line, seat, func(int) bool { return true }, w.cfg.PassLimit)
	if at < 0 {
		return Booking{}, false, nil
	}
	e := line[at]
	b, err := w.holds.holdResale(ctx, HoldRequest{UserID: e.UserID, ShowID: l.ShowID, SeatIDs: []string{l.SeatID},
		Language: e.Language, ttl: w.cfg.OfferTTL, resalePrice: l.Price}, false)
	if err != nil {
		if IsConflict(err) || errors.Is(err, ErrTooManySeats) || errors.Is(err, ErrSaleNotOpen) {
			return Booking{}, false, nil // someone is buying it already, or this fan cannot hold it: the public's
		}
		return Booking{}, false, err
	}
	passed := make([]int64, at)
	for i := range at {
		passed[i] = line[i].ID
	}
	err = attach(ctx, b)
	ok := false
	if err == nil {
		ok, err = w.store.RecordOffer(ctx, e.ID, b, passed)
	}
	if err != nil || !ok {
		if _, _, cerr := w.holds.Cancel(context.WithoutCancel(ctx), b.ID, b.UserID); cerr != nil {
			w.log.WarnContext(ctx, "waitlist: cancel an unrecorded resale offer", "booking", b.ID, "err", cerr)
		}
		return Booking{}, false, err
	}
	if w.cfg.OnOffer != nil {
		w.cfg.OnOffer()
	}
	w.log.InfoContext(ctx, "waitlist resale offer", "show", l.ShowID, "entry", e.ID, "booking", b.ID, "listing", l.ID)
	w.signal(ctx, l.ShowID, e.UserID)
	return b, true, nil
}

// chooseOffer is the fairness policy, pure: the index in line of the entry to offer to and its seats, or -1.
func chooseOffer(line []WaitlistEntry, layout []Seat, free func(int) bool, passLimit int) (int, []string) {
	for i, e := range line {
		if seats := pickOfferSeats(layout, free, e.Seats, e.Category); seats != nil {
			return i, seats
		}
		if e.PassedOver >= passLimit {
			return -1, nil // this group has waited long enough: nobody overtakes it again
		}
	}
	return -1, nil
}

// pickOfferSeats picks n free seats of category (or of any category, trying them in map order, when category is
// empty): a run of adjacent seats in one row when there is one, nearest the front; nil when too few are free.
func pickOfferSeats(layout []Seat, free func(int) bool, n int, category string) []string {
	var cats []string
	if category != "" {
		cats = []string{category}
	} else {
		for i, st := range layout {
			if i == 0 || !slices.Contains(cats, st.Category) {
				cats = append(cats, st.Category)
			}
		}
	}
	for _, c := range cats {
		// The alternatives' picker, aimed at the front of the hall: adjacent first, nearest otherwise.
		front := -1
		for i, st := range layout {
			if st.Category == c {
				front = i
				break
			}
		}
		if front < 0 {
			continue
		}
		wanted := make([]Seat, n)
		for i := range wanted {
			wanted[i] = layout[front]
		}
		if got := pickAlternatives(layout, free, wanted); len(got) == n {
			return got
		}
	}
	return nil
}

// HoldOffer takes a hold for a waitlist offer: the same validation, claim (hold.lua), fencing and ledger row as
// any hold, with the offer's TTL and no waiting-room admission (the waitlist admitted the fan).
func (s *Holds) HoldOffer(ctx context.Context, userID, showID string, seatIDs []string, ttl time.Duration, lang string) (Booking, error) {
	r := HoldRequest{UserID: userID, ShowID: showID, SeatIDs: seatIDs, ttl: ttl, Language: lang}
	t, seats, err := s.validateHold(ctx, r, nil)
	if err != nil {
		return Booking{}, err
	}
	return s.hold(ctx, r, t, seats, nil)
}

// OfferLookup tells the Holds which bookings are waitlist offers (the WaitlistStore).
type OfferLookup interface {
	IsOffer(ctx context.Context, bookingID string) (bool, error)
}

// AdmitBooking runs the waiting-room check for an operation on b (pay): a waitlist offer needs none, since the
// waitlist admitted its fan.
func (s *Holds) AdmitBooking(ctx context.Context, b Booking, userID, raw string) error {
	if s.offers != nil && s.gate != nil {
		if offer, err := s.offers.IsOffer(ctx, b.ID); err != nil {
			return err
		} else if offer {
			return nil
		}
	}
	_, _, err := s.Admit(ctx, b.ShowID, userID, raw)
	return err
}

// HandleEvent is the waitlist's consumer of the event stream: a confirmed offer is ACCEPTED; an offer whose hold
// expired or was cancelled LAPSED; and whenever seats come back (expiry, cancellation, refund) the show's line is
// offered them. Every step is idempotent, so a redelivered event changes nothing.
func (w *Waitlist) HandleEvent(ctx context.Context, e LifecycleEvent) error {
	switch e.Type {
	case EventConfirmed:
		return w.endOffer(ctx, e.Subject, WaitlistAccepted)
	case EventExpired, EventCancelled:
		if err := w.lapse(ctx, e.Subject); err != nil {
			return err
		}
	case EventRefunded:
	default:
		return nil
	}
	if e.ShowID == "" {
		return nil
	}
	_, err := w.Offer(ctx, e.ShowID)
	if errors.Is(err, ErrNotFound) {
		return nil // a show deleted since: nothing to offer
	}
	return err
}

// lapse ends the offer that was the hold bookingID, LAPSED, and when that offer was of a listing on the exchange
// passes the listing on to the next fan in line (resale.go's reofferListing, through offerListing below): a seat
// coming back is offered by Offer, but a listing's seat stays sold to its seller and is never free.
func (w *Waitlist) lapse(ctx context.Context, bookingID string) error {
	if err := w.endOffer(ctx, bookingID, WaitlistLapsed); err != nil {
		return err
	}
	if w.holds.reofferListing == nil {
		return nil
	}
	return w.holds.reofferListing(ctx, bookingID)
}

func (w *Waitlist) endOffer(ctx context.Context, bookingID string, to WaitlistStatus) error {
	e, ok, err := w.store.EndOffer(ctx, bookingID, to)
	if err != nil || !ok {
		return err
	}
	w.log.InfoContext(ctx, "waitlist offer ended", "show", e.ShowID, "entry", e.ID, "booking", bookingID, "status", to)
	if w.cfg.OnOfferEnd != nil {
		w.cfg.OnOfferEnd(to)
	}
	w.signal(ctx, e.ShowID, e.UserID)
	return nil
}

// Run is the waitlist's safety sweep until ctx ends: every SweepEvery it ends offers whose end it missed and
// offers seats in every show with a line, in case an event was lost (trimmed from the stream unread).
func (w *Waitlist) Run(ctx context.Context) {
	t := time.NewTicker(w.cfg.SweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.Sweep(ctx)
	}
}

// Sweep does one pass of the safety sweep.
func (w *Waitlist) Sweep(ctx context.Context) {
	stale, err := w.store.StaleOffers(ctx, 500)
	if err != nil {
		w.log.WarnContext(ctx, "waitlist sweep: stale offers", "err", err)
	}
	for _, e := range stale {
		if e.Offer == nil {
			continue
		}
		end := w.lapse
		if b, err := w.holds.store.Booking(ctx, e.Offer.BookingID); err == nil && b.Status == StatusConfirmed {
			end = func(ctx context.Context, id string) error { return w.endOffer(ctx, id, WaitlistAccepted) }
		}
		if err := end(ctx, e.Offer.BookingID); err != nil {
			w.log.WarnContext(ctx, "waitlist sweep: end offer", "entry", e.ID, "err", err)
		}
	}
	shows, err := w.store.ShowsInLine(ctx)
	if err != nil {
		w.log.WarnContext(ctx, "waitlist sweep: shows", "err", err)
		return
	}
	for _, id := range shows {
		if ctx.Err() != nil {
			return
		}
		if _, err := w.Offer(ctx, id); err != nil && !errors.Is(err, ErrNotFound) {
			w.log.WarnContext(ctx, "waitlist sweep: offer", "show", id, "err", err)
		}
	}
}
