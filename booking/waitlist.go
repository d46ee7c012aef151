package booking

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// WaitlistStatus is where a fan's waitlist entry stands.
type WaitlistStatus string

// An entry is WAITING in line until it is OFFERED seats (a hold made for it); the offer ends ACCEPTED (paid) or
// LAPSED (its hold expired or was cancelled unpaid). LEFT: the fan left the waitlist.
const (
	WaitlistWaiting  WaitlistStatus = "WAITING"
	WaitlistOffered  WaitlistStatus = "OFFERED"
	WaitlistAccepted WaitlistStatus = "ACCEPTED"
	WaitlistLapsed   WaitlistStatus = "LAPSED"
	WaitlistLeft     WaitlistStatus = "LEFT"
)

// WaitlistEntry is a fan's place on a sold-out show's waitlist.
type WaitlistEntry struct {
	ID       int64
	ShowID   string
	UserID   string
	Seats    int
	Category string // the seat category asked for; empty: any
	Language string // the fan's page language (Accept-Language), for notifications
	Status   WaitlistStatus
	// Position is 1-based among the entries still in line (WAITING or OFFERED), first come first served; 0 once
	// the entry is out of line. A fan joining again while in line keeps it.
	Position   int
	PassedOver int // offers made to entries behind this one while it did not fit
	JoinedAt   time.Time
	Offer      *WaitlistOffer // while OFFERED, and kept afterwards for the record
}

// WaitlistOffer is the hold made for a waitlist entry: pay for BookingID before ExpiresAt and the seats are yours.
type WaitlistOffer struct {
	BookingID string
	SeatIDs   []string
	ExpiresAt time.Time
}

// WaitlistJoin is a request to join a waitlist.
type WaitlistJoin struct {
	ShowID   string
	UserID   string
	Seats    int
	Category string
	Language string
}

// WaitlistStore keeps waitlists; booking/postgres implements it.
type WaitlistStore interface {
	// JoinWaitlist adds the user to the show's waitlist. An entry still in line keeps its place and takes the new
	// seat count and category; one out of line (accepted, lapsed, left) goes to the back of the line, WAITING.
	JoinWaitlist(ctx context.Context, j WaitlistJoin, now time.Time) (WaitlistEntry, error)
	// WaitlistEntry is the user's entry with its position; ErrNotFound when there is none.
	WaitlistEntry(ctx context.Context, showID, userID string) (WaitlistEntry, error)
	// LeaveWaitlist marks the user's entry LEFT and returns it as it was before.
	LeaveWaitlist(ctx context.Context, showID, userID string) (WaitlistEntry, error)
	// Waitlist lists every entry of the show in line order, those out of line included.
	Waitlist(ctx context.Context, showID string) ([]WaitlistEntry, error)

	// LockOffers holds the show's offer lock, shared by every replica, until unlock is called: offers of one show
	// are decided one at a time, so two replicas never pick the same entry or the same seats.
	LockOffers(ctx context.Context, showID string) (unlock func(), err error)
	// InLine lists the show's WAITING entries, oldest first.
	InLine(ctx context.Context, showID string) ([]WaitlistEntry, error)
	// RecordOffer marks a WAITING entry OFFERED with b as its offer, adds one to the passed_over of each of
	// passed, and writes waitlist.offered to the outbox, in one transaction. False when the entry was no longer
	// WAITING (the fan left meanwhile).
	RecordOffer(ctx context.Context, entryID int64, b Booking, passed []int64) (bool, error)
	// EndOffer moves the entry whose offer is bookingID from OFFERED to to (ACCEPTED or LAPSED) with its event,
	// and returns it; ok is false when no entry was OFFERED with that booking.
	EndOffer(ctx context.Context, bookingID string, to WaitlistStatus) (e WaitlistEntry, ok bool, err error)
	// IsOffer reports whether bookingID is a waitlist offer.
	IsOffer(ctx context.Context, bookingID string) (bool, error)
	// StaleOffers lists OFFERED entries whose booking is no longer held or being paid: offers whose end the
	// waitlist missed (an event lost past the stream's retention).
	StaleOffers(ctx context.Context, limit int) ([]WaitlistEntry, error)
	// ShowsInLine lists the shows with WAITING entries.
	ShowsInLine(ctx context.Context) ([]string, error)
}

// WaitlistSignal tells a fan's open pages that their entry changed (booking/redis publishes it); best effort,
// since the page reads the entry again whenever its stream (re)opens.
type WaitlistSignal interface {
	WaitlistChanged(ctx context.Context, showID, userID string) error
}

// WaitlistConfig tunes a Waitlist.
type WaitlistConfig struct {
	// OfferTTL is how long an offer's hold lasts (WAITLIST_OFFER_TTL); default 15m.
	OfferTTL time.Duration
	// PassLimit is how many times an entry that does not fit may be passed over by smaller entries behind it
	// before it blocks the line (WAITLIST_PASS_LIMIT); default 3.
	PassLimit int
	// SweepEvery is the period of the safety sweep (offers for every show with a line, stale offers ended);
	// default 30s.
	SweepEvery time.Duration
	Signal     WaitlistSignal // nil: no live signal
	Logger     *slog.Logger
	// OnOffer is told of every offer made, and OnOfferEnd of every offer ended (ACCEPTED or LAPSED), for
	// metrics; nil is fine.
	OnOffer    func()
	OnOfferEnd func(WaitlistStatus)
}

// Waitlist lets fans of a sold-out show queue for seats that come back (expired or cancelled holds, refunds) and
// offers those seats to them in turn: FIFO, group-aware, with a bound on how often a group may be passed over
// (waitlist_offer.go).
type Waitlist struct {
	catalog *Catalog
	holds   *Holds
	store   WaitlistStore
	cfg     WaitlistConfig
	log     *slog.Logger
}

// NewWaitlist returns the waitlist of svc's shows. svc learns from it which bookings are offers (they are paid
// without a waiting-room admission: the fan was admitted by the waitlist).
func NewWaitlist(svc *Service, store WaitlistStore, cfg WaitlistConfig) *Waitlist {
	if cfg.OfferTTL <= 0 {
		cfg.OfferTTL = 15 * time.Minute
	}
	if cfg.PassLimit <= 0 {
		cfg.PassLimit = 3
	}
	if cfg.SweepEvery <= 0 {
		cfg.SweepEvery = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = svc.Holds.log
	}
	w := &Waitlist{catalog: svc.Catalog, holds: svc.Holds, store: store, cfg: cfg, log: cfg.Logger}
	svc.Holds.offers = store
	svc.Holds.offerTTL = cfg.OfferTTL
	svc.Holds.offerListing = w.offerListing
	return w
}

// OfferTTL is how long an offer's hold lasts.
func (w *Waitlist) OfferTTL() time.Duration { return w.cfg.OfferTTL }

// Join puts the fan on the show's waitlist. Only a show with no seat available takes entries: held seats count as
// unavailable, since nobody else can book them now.
func (w *Waitlist) Join(ctx context.Context, j WaitlistJoin) (WaitlistEntry, error) {
	if j.Seats < 1 || j.Seats > w.holds.cfg.MaxSeats {
		return WaitlistEntry{}, Unprocessable("seats must be between 1 and %d", w.holds.cfg.MaxSeats)
	}
	show, counts, err := w.catalog.ShowDetail(ctx, j.ShowID)
	if err != nil {
		return WaitlistEntry{}, err
	}
	if _, ok := show.Prices[j.Category]; j.Category != "" && !ok {
		return WaitlistEntry{}, Unprocessable("category %q is not sold in this show", clip(j.Category))
	}
	if counts.Available > 0 {
		return WaitlistEntry{}, fmt.Errorf("%w: %d seats are on sale", ErrNotSoldOut, counts.Available)
	}
	if len(j.Language) > 35 {
		j.Language = ""
	}
	e, err := w.store.JoinWaitlist(ctx, j, w.holds.cfg.Now())
	if err == nil {
		w.signal(ctx, e.ShowID, e.UserID)
	}
	return e, err
}

// Entry is the fan's entry on the show's waitlist; ErrNotFound when they have none.
func (w *Waitlist) Entry(ctx context.Context, showID, userID string) (WaitlistEntry, error) {
	if _, err := w.catalog.Show(ctx, showID); err != nil {
		return WaitlistEntry{}, err
	}
	return w.store.WaitlistEntry(ctx, showID, userID)
}

// Leave takes the fan off the show's waitlist. An open offer is given up: its hold is cancelled, so the seats
// pass to the next in line at once.
func (w *Waitlist) Leave(ctx context.Context, showID, userID string) (WaitlistEntry, error) {
	if _, err := w.catalog.Show(ctx, showID); err != nil {
		return WaitlistEntry{}, err
	}
	prev, err := w.store.LeaveWaitlist(ctx, showID, userID)
	if err != nil || prev.Status == WaitlistAccepted {
		return prev, err // an accepted entry stays: its fan has the tickets
	}
	if prev.Status == WaitlistOffered && prev.Offer != nil {
		if _, _, err := w.holds.Cancel(ctx, prev.Offer.BookingID, userID); err != nil && !errors.Is(err, ErrNotHeld) &&
			!errors.Is(err, ErrHoldExpired) {
			w.log.WarnContext(ctx, "waitlist: cancel the offer of a fan who left", "booking", prev.Offer.BookingID, "err", err)
		}
	}
	w.signal(ctx, showID, userID)
	e := prev
	e.Status, e.Position = WaitlistLeft, 0
	return e, nil
}

// Entries is the show's whole waitlist, for operators.
func (w *Waitlist) Entries(ctx context.Context, showID string) ([]WaitlistEntry, error) {
	if _, err := w.catalog.Show(ctx, showID); err != nil {
		return nil, err
	}
	return w.store.Waitlist(ctx, showID)
}

func (w *Waitlist) signal(ctx context.Context, showID, userID string) {
	if w.cfg.Signal == nil {
		return
	}
	if err := w.cfg.Signal.WaitlistChanged(ctx, showID, userID); err != nil {
		w.log.DebugContext(ctx, "waitlist signal", "show", showID, "err", err)
	}
}
