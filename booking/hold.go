package booking

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/shard"
	"github.com/flashseat/flashseat/shared/token"
)

// HoldStore is the ledger as the Holds need it: the bookings, and the Idempotency-Keys of hold requests.
type HoldStore interface {
	// CreateHold records a HELD booking and its seats' fences. ErrStale when a seat has a newer fence on record.
	CreateHold(ctx context.Context, b *Booking) error
	Booking(ctx context.Context, id string) (Booking, error)
	// BookingsOf lists a user's bookings, newest first, at most limit.
	BookingsOf(ctx context.Context, userID string, limit int) ([]Booking, error)
	// UserBookings lists a user's most recent bookings, newest first.
	UserBookings(ctx context.Context, userID string, limit int) ([]Booking, error)
	// Cancel moves the user's HELD booking to CANCELLED.
	Cancel(ctx context.Context, id, userID string) (Booking, error)
	// Expire marks one HELD booking EXPIRED (its locks were lost).
	Expire(ctx context.Context, id string) (Booking, error)
	// Confirm moves a HELD (or PAYMENT_PENDING) booking to CONFIRMED and writes its seats into the ledger, in one
	// transaction that checks the fencing token. ErrStale, ErrSeatsUnavailable, ErrNotHeld.
	Confirm(ctx context.Context, id string) (Booking, error)
	// Extend moves a HELD booking's expiry.
	Extend(ctx context.Context, id string, until time.Time) error
	// BeginIdempotent claims (user, scope, key) for a request with the given hash. If it was claimed before it
	// returns the record: a finished one carries ResultID, a pending one does not. A record of the same request
	// still pending staleAfter (above 0) after it was claimed is taken over: claimed, with TakenOver and its Age.
	BeginIdempotent(ctx context.Context, userID, scope, key, hash string, staleAfter time.Duration) (rec IdempotencyRecord, claimed bool, err error)
	FinishIdempotent(ctx context.Context, userID, scope, key, resultID string) error
	AbortIdempotent(ctx context.Context, userID, scope, key string) error
}

// HoldLocks is Redis as the Holds need it: the seat locks with their fencing tokens, the sold set, and the seat
// events a release publishes.
type HoldLocks interface {
	// Claim locks every seat of the claim for the booking, or none.
	Claim(ctx context.Context, c Claim) (ClaimResult, error)
	// DropEpoch forgets the show's fencing epoch in Redis, so the next claim starts a new one.
	DropEpoch(ctx context.Context, showID string) error
	// Release deletes the locks b still owns and publishes the seats as AVAILABLE. It returns the seats freed.
	Release(ctx context.Context, b Booking) ([]string, error)
	// Sell records b's seats as sold, drops b's locks and publishes the seats as BOOKED.
	Sell(ctx context.Context, b Booking) error
	// Unsell takes b's seats out of the sold set (after a refund) and publishes them as AVAILABLE.
	Unsell(ctx context.Context, b Booking) error
	// Owned reports whether every lock of b still carries b's id and fence.
	Owned(ctx context.Context, b Booking) (bool, error)
	// Extend pushes the expiry of b's locks to ttl from now, only if b still owns all of them.
	Extend(ctx context.Context, b Booking, ttl time.Duration) (bool, error)
	// Status reads the live state of the given seats in one round trip: held and sold flags by seat.
	Status(ctx context.Context, showID string, seatIDs []string) (held, sold map[string]bool, err error)
	// PublishSeats announces seat changes on the show's seat channel.
	PublishSeats(ctx context.Context, showID string, evs []SeatEvent) error
}

// Holds claims seats for fans (Hold) and sees each hold to its end: cancelled by the fan, expired, or confirmed
// by the checkout (hold_confirm.go). Its fast refusals come from the seat cache; every grant from the hold script
// on the live locks.
type Holds struct {
	catalog   *Catalog
	seats     *seatCache
	store     HoldStore
	locks     HoldLocks
	gate      Admitter // nil when no show ever has a queue
	cfg       Config
	log       *slog.Logger
	restoreMu sync.Mutex    // one fencing-epoch restore at a time
	offers    OfferLookup   // which bookings are waitlist offers (set by NewWaitlist); nil: none are
	offerTTL  time.Duration // the TTL of waitlist offers' holds (set by NewWaitlist); 0: no offers
	window    time.Duration // claimWindow, but shorter in tests
	// offerListing offers a new listing to the show's waitlist (set by NewWaitlist; nil: no waitlist): attach
	// records the offer's hold as the listing's before the offer is made.
	offerListing func(ctx context.Context, l Listing, attach func(context.Context, Booking) error) (Booking, bool, error)
	// reofferListing offers the listing whose waitlist offer was the hold bookingID, if it is still listed, to the
	// next fan in line (set by NewCheckout; nil: no exchange): the waitlist calls it when that offer lapses.
	reofferListing func(ctx context.Context, bookingID string) error
	// expireAt asks the Reconciler to expire a show's lapsed holds at a time no lock expiry will report: that of a
	// hold ending with its admission (Reconciler.expireAt).
	expireAt func(showID string, at time.Time)
}

// claimWindow bounds a hold's claim and the insert of its booking row together: both run under one deadline taken
// before the hold script is sent, so no row is ever written for a lock claimed longer ago than this. That is what
// lets the Reconciler take a lock whose booking Postgres does not know, once it is older than orphanGrace, for an
// orphan (a claim whose reply or insert failed) and release it. A hold that takes this long has lost its fan
// anyway: the edge gives up on booking after 30 s.
const claimWindow = 20 * time.Second

// shortestTTL is the shortest TTL any claim is made with: the lower bound of a lock's age the Reconciler reads
// from the time the lock has left.
func (s *Holds) shortestTTL() time.Duration {
	if s.offerTTL > 0 && s.offerTTL < s.cfg.HoldTTL {
		return s.offerTTL
	}
	return s.cfg.HoldTTL
}

// HoldTTL is how long a hold lasts.
func (s *Holds) HoldTTL() time.Duration { return s.cfg.HoldTTL }

// MaxSeats is the per-booking and per-user seat cap.
func (s *Holds) MaxSeats() int { return s.cfg.MaxSeats }

// HoldRequest asks for seats of a show for a user.
type HoldRequest struct {
	UserID         string
	ShowID         string
	SeatIDs        []string
	AdmissionToken string // raw token from the header or cookie; needed when the show's queue is on
	IdempotencyKey string
	ttl            time.Duration // the hold's TTL when not Config.HoldTTL (waitlist offers)
	resalePrice    int64         // a hold of a listed seat (resale.go) at this price; 0: an ordinary hold
	Language       string        // the fan's page language, for notifications ("" unknown)
}

// NewID returns a fresh random id with a prefix ("bk_...").
func NewID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// Hold claims the requested seats for the user: all of them or none. With an idempotency key, a repeat of the
// same request returns the first request's booking (replayed true) instead of holding again.
func (s *Holds) Hold(ctx context.Context, r HoldRequest) (b Booking, replayed bool, err error) {
	var buf [4]Seat // the requested seats: a fan asks for a few, and they need not outlive the request
	t, seats, err := s.validateHold(ctx, r, buf[:0])
	if err != nil {
		return Booking{}, false, err
	}
	claims, err := s.admit(ctx, r.ShowID, r.UserID, r.AdmissionToken)
	if err != nil {
		return Booking{}, false, err
	}
	if r.IdempotencyKey == "" {
		b, err := s.hold(ctx, r, t, seats, claims)
		return b, false, err
	}
	return s.holdIdempotent(ctx, r, t, seats, claims)
}

// holdTarget is what validateHold found for a hold: the show and its whole layout, read once from the catalog's
// cache for the rest of the hold.
type holdTarget struct {
	show   *Show // the catalog's cached definition: read, never changed
	layout []Seat
}

// validateHold checks a hold request against the catalog and returns the show and the requested seats, appended
// to seats. The seats travel beside the target, not in it: the layout escapes (a snapshot reload keeps it), and
// in one struct it would take the caller's buffer of seats to the heap with it on every request.
func (s *Holds) validateHold(ctx context.Context, r HoldRequest, seats []Seat) (holdTarget, []Seat, error) {
	if r.ShowID == "" {
		return holdTarget{}, nil, Invalid("showId is required")
	}
	if len(r.SeatIDs) == 0 {
		return holdTarget{}, nil, Unprocessable("seatIds must name at least one seat")
	}
	if len(r.SeatIDs) > s.cfg.MaxSeats {
		return holdTarget{}, nil, fmt.Errorf("%w: at most %d seats per booking", ErrTooManySeats, s.cfg.MaxSeats)
	}
	show, err := s.catalog.cachedShow(ctx, r.ShowID)
	if err != nil {
		return holdTarget{}, nil, err
	}
	layout, byID, err := s.catalog.layoutIndex(ctx, r.ShowID)
	if err != nil {
		return holdTarget{}, nil, err
	}
	for j, id := range r.SeatIDs {
		if slices.Contains(r.SeatIDs[:j], id) { // at most MaxSeats: a scan beats a map
			return holdTarget{}, nil, Unprocessable("seat %q is listed twice", clip(id))
		}
		i, ok := byID[id]
		if !ok {
			return holdTarget{}, nil, Unprocessable("seat %q does not exist in this show", clip(id))
		}
		seats = append(seats, layout[i])
	}
	now := s.cfg.Now()
	if !show.SaleClosedAt.IsZero() {
		return holdTarget{}, nil, fmt.Errorf("%w: the sale of this show was closed at %s", ErrSaleClosed,
			show.SaleClosedAt.UTC().Format(time.RFC3339))
	}
	if now.Before(show.SaleStartsAt) {
		return holdTarget{}, nil, fmt.Errorf("%w: sale opens at %s", ErrSaleNotOpen, show.SaleStartsAt.UTC().Format(time.RFC3339))
	}
	if !now.Before(show.StartsAt) {
		return holdTarget{}, nil, fmt.Errorf("%w: the show has started", ErrSaleNotOpen)
	}
	return holdTarget{show: show, layout: layout}, seats, nil
}

// clip keeps client-supplied text in error messages short.
func clip(s string) string {
	r := []rune(s)
	if len(r) > 16 {
		return string(r[:16]) + "…"
	}
	return s
}

func (s *Holds) hold(ctx context.Context, r HoldRequest, t holdTarget, seats []Seat, adm *admitted) (Booking, error) {
	// The fast refusal: in a flash crowd nearly every request is for seats that are already taken. When a recent
	// snapshot (at most alternativesMaxAge old, kept current by every replica's seat events; a crowd that finds it
	// older waits for one reload) shows a requested seat held or sold, refuse at once without asking Redis. A
	// success is always decided by the hold script on the live locks; the snapshot can only make a seat freed in
	// the last instant look taken a little longer.
	//
	// Seats the snapshot shows free are marked taken in it while this request claims them (reserve), so the
	// crowd asking for the same seats meanwhile is refused at once too, instead of every one of them queueing on
	// the hold script for seats a single claim is about to take. A claim that does not take a seat hands it back.
	show, layout := t.show, t.layout
	if adm != nil && !adm.exp.IsZero() && !adm.exp.After(s.cfg.Now()) {
		// Accepted by the gate only within its leeway: a hold would end as it began (below, a hold ends with its
		// admission). Refused before the snapshot marks any seat taken for it.
		return Booking{}, &QueueError{ShowID: r.ShowID, Cause: fmt.Errorf("%w: %w", admission.ErrRequired, token.ErrExpired)}
	}
	var taken [4]string
	resale := r.resalePrice > 0
	var sn *snapshot
	var e *showSeats
	var refused []string
	var marked bool
	if !resale { // a listed seat is sold in the snapshot: only the resale claim can tell whether it is free to buy
		sn, e, refused, marked = s.seats.reserve(ctx, r.ShowID, r.SeatIDs, layout, alternativesMaxAge, taken[:0])
	}
	if len(refused) > 0 {
		s.seats.countConflict(e, r.ShowID)
		if s.cfg.OnConflict != nil {
			s.cfg.OnConflict()
		}
		return Booking{}, newRefusal(refused, sn.alternatives(layout, seats))
	}
	unmark := func(ids []string) {
		if marked {
			s.seats.noteFreed(r.ShowID, ids)
		}
	}
	ttl := s.cfg.HoldTTL
	if r.ttl > 0 {
		ttl = r.ttl
	}
	// Postgres keeps microseconds and Redis milliseconds: round once, so a replay reads back what was returned.
	now := s.cfg.Now().UTC().Truncate(time.Millisecond)
	b := Booking{
		UserID:    r.UserID,
		ShowID:    r.ShowID,
		Status:    StatusHeld,
		SeatIDs:   append([]string(nil), r.SeatIDs...),
		Currency:  show.Currency,
		ExpiresAt: now.Add(ttl),
		Language:  r.Language,
		CreatedAt: now,
	}
	for _, st := range seats {
		b.TotalAmount += st.Price
	}
	if resale {
		b.TotalAmount = r.resalePrice
	}
	if adm != nil {
		b.AdmissionJTI, b.AdmissionExp = adm.jti, adm.exp
		// A hold made under an admission is paid under it too (a new payment needs a valid admission token), so
		// past the token's expiry nobody can pay for these seats: held longer, they would sit in limbo until the
		// hold TTL, out of reach of the fans the queue admits next. The hold ends with the admission instead,
		// and its expiresAt tells the fan so. Only the ledger's expiry is shortened; the seat locks keep the hold
		// TTL as the backstop they are (the reconciler expires the booking and releases them at expiresAt), so
		// a lock's age still follows from the time it has left (reconcile_orphans.go).
		if !adm.exp.IsZero() && adm.exp.Before(b.ExpiresAt) {
			b.ExpiresAt = adm.exp.UTC()
		}
	}
	b.ID = shard.ID("bk_", b.ShowID) // the show's shard is found from the id alone
	claim := Claim{ShowID: b.ShowID, BookingID: b.ID, UserID: b.UserID, SeatIDs: b.SeatIDs, TTL: ttl,
		Now: now, UserCap: s.cfg.MaxSeats, Resale: resale}
	ctx, cancel := context.WithTimeout(ctx, s.window)
	defer cancel()
	res, err := s.locks.Claim(ctx, claim)
	if err == nil && res.NoEpoch {
		// Redis has no epoch for this show: Redis lost its data (or the show predates epochs at creation). Start
		// a new epoch from Postgres so fences stay above every fence issued before, and restore the sold seats
		// with it. One request per process does it; the crowd behind it waits and then finds the epoch.
		s.restoreMu.Lock()
		if res, err = s.locks.Claim(ctx, claim); err == nil && res.NoEpoch {
			if err = s.catalog.restoreShow(ctx, b.ShowID); err == nil {
				res, err = s.locks.Claim(ctx, claim)
			}
		}
		s.restoreMu.Unlock()
	}
	if err != nil || res.NoEpoch || res.OverCap {
		unmark(b.SeatIDs)
	}
	switch {
	case err != nil:
		return Booking{}, err
	case res.NoEpoch:
		return Booking{}, fmt.Errorf("booking: fencing epoch vanished twice for show %s", b.ShowID)
	case res.OverCap:
		return Booking{}, fmt.Errorf("%w: a fan may hold at most %d seats of a show at once", ErrTooManySeats, s.cfg.MaxSeats)
	case !res.OK && resale:
		if s.cfg.OnConflict != nil {
			s.cfg.OnConflict()
		}
		return Booking{}, &ConflictError{Unavailable: res.Taken, Alternatives: []string{}}
	case !res.OK:
		s.seats.noteHeld(b.ShowID, res.Taken)
		unmark(slices.DeleteFunc(slices.Clone(b.SeatIDs), func(id string) bool { return slices.Contains(res.Taken, id) }))
		if s.cfg.OnConflict != nil {
			s.cfg.OnConflict()
		}
		return Booking{}, &ConflictError{Unavailable: res.Taken, Alternatives: s.alternatives(ctx, b.ShowID, seats)}
	}
	b.Fence = res.Fence
	if err := s.store.CreateHold(ctx, &b); err != nil {
		// Without its row the claim would block the seats for a whole TTL with nobody able to pay for them.
		if _, rerr := s.locks.Release(context.WithoutCancel(ctx), b); rerr != nil {
			s.log.ErrorContext(ctx, "release claim after failed insert", "booking", b.ID, "err", rerr)
		}
		unmark(b.SeatIDs)
		if errors.Is(err, ErrStale) {
			// Redis handed out a fence below one already recorded (its counter went back in a failover). Drop
			// the epoch so the next claim starts a new one above every recorded fence, and answer a conflict.
			if rerr := s.locks.DropEpoch(context.WithoutCancel(ctx), b.ShowID); rerr != nil {
				s.log.ErrorContext(ctx, "drop stale epoch", "show", b.ShowID, "err", rerr)
			}
			return Booking{}, &ConflictError{Unavailable: b.SeatIDs, Alternatives: []string{}}
		}
		return Booking{}, err
	}
	if !resale {
		s.seats.noteClaimed(b.ShowID, b.SeatIDs)
	}
	if b.ExpiresAt.Before(now.Add(ttl)) && s.expireAt != nil {
		s.expireAt(b.ShowID, b.ExpiresAt) // ends with its admission, before its locks would
	}
	if s.cfg.OnHold != nil {
		s.cfg.OnHold()
	}
	s.catalog.markDirty(b.ShowID)
	return b, nil
}

// restoreShow bumps the show's fencing epoch in Postgres and installs it in Redis together with the sold seats.
func (s *Catalog) restoreShow(ctx context.Context, showID string) error {
	epoch, err := s.store.BumpEpoch(ctx, showID)
	if err != nil {
		return err
	}
	sold, err := s.store.SoldSeats(ctx, showID)
	if err != nil {
		return err
	}
	s.log.InfoContext(ctx, "new fencing epoch", "show", showID, "epoch", epoch)
	return s.locks.SetEpoch(ctx, showID, epoch, sold)
}

// Booking returns the user's booking; another user's booking is ErrNotFound.
func (s *Holds) Booking(ctx context.Context, id, userID string) (Booking, error) {
	b, err := s.store.Booking(ctx, id)
	if err != nil {
		return Booking{}, err
	}
	if b.UserID != userID {
		return Booking{}, fmt.Errorf("booking %s: %w", id, ErrNotFound)
	}
	return b, nil
}

// Cancel releases the user's HELD booking: the booking becomes CANCELLED, the locks it still owns are deleted
// (compare-and-delete, so a stale cancel never frees seats someone else holds now) and its waiting-room slot is
// freed. It returns the booking and the seats released.
func (s *Holds) Cancel(ctx context.Context, id, userID string) (Booking, []string, error) {
	b, freed, err := s.undo(ctx, id, userID)
	if err != nil {
		return Booking{}, nil, err
	}
	s.releaseAdmission(ctx, b)
	return b, freed, nil
}

// undo is Cancel for a hold the request that made it could not complete (a purchase on the exchange whose
// listing was withdrawn or sold in the meantime): the fan never had it, so the waiting-room slot it was made
// under stays theirs, and they go on shopping with it.
func (s *Holds) undo(ctx context.Context, id, userID string) (Booking, []string, error) {
	b, err := s.store.Cancel(ctx, id, userID)
	if err != nil {
		return Booking{}, nil, err
	}
	freed, err := s.locks.Release(ctx, b)
	if err != nil {
		// The booking is cancelled; its locks lapse at their TTL at the latest.
		s.log.ErrorContext(ctx, "release locks of cancelled booking", "booking", b.ID, "err", err)
		freed = nil
	}
	s.seats.noteReleased(b.ShowID, freed)
	s.catalog.markDirty(b.ShowID)
	return b, freed, nil
}
