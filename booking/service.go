package booking

import (
	"context"
	"log/slog"
	"time"

	"github.com/flashseat/flashseat/shared/token"
)

// Store is the Postgres ledger as the Service needs it, the union of what each part uses (CatalogStore,
// HoldStore, ReconcileStore). booking/postgres implements it.
type Store interface {
	CatalogStore
	HoldStore
	ReconcileStore
}

// Seats is Redis as the Service needs it, the union of what each part uses: the seat locks (HoldLocks), the live
// status, counters and ShowInfo (CatalogBoard) and the sold set's repair (ReconcileMirror). booking/redis
// implements it.
type Seats interface {
	HoldLocks
	CatalogBoard
	ReconcileMirror
}

// Claim asks for a set of seats for one booking.
type Claim struct {
	ShowID    string
	BookingID string
	UserID    string
	SeatIDs   []string
	TTL       time.Duration
	Now       time.Time
	// UserCap bounds the seats one user may hold in the show at once, over all live holds.
	UserCap int
	// Resale claims seats that are sold (a listed ticket's, on the exchange) instead of seats that are free.
	Resale bool
}

// ClaimResult is the outcome of a Claim. Exactly one of the flags describes a failure, or OK is set.
type ClaimResult struct {
	OK      bool
	Fence   int64
	Taken   []string // held or sold by others
	NoEpoch bool     // Redis has no fencing epoch for the show (fresh show, or Redis lost its data)
	OverCap bool     // the user would hold more than UserCap seats
}

// Admitter checks the waiting room's admission for a request, ends an admission once used (recorded durably, so a
// rebuilt waiting room still refuses the token), and tells whether a show's queue is on (for the catalog's
// queueEnabled); shared/admission's Gate implements it.
type Admitter interface {
	Check(ctx context.Context, showID, userID, raw string) (*token.Admission, error)
	Release(ctx context.Context, showID, userID, jti string, exp time.Time) error
	Enabled(ctx context.Context, showID string) (bool, error)
}

// Config tunes a Service.
type Config struct {
	HoldTTL        time.Duration
	MaxSeats       int
	ReconcileEvery time.Duration
	InfoCoalesce   time.Duration // at most one ShowInfo rewrite per show per this interval
	// FanRetention is how long after a show's report is summarised the per-fan rows it was built from are kept
	// (REPORT_FAN_RETENTION); default 30 days.
	FanRetention time.Duration
	Now          func() time.Time
	Logger       *slog.Logger
	OnHold       func() // metrics hooks; nil is fine
	OnConflict   func()
	OnExpired    func(n int)
}

// Service is the booking behaviour, in three parts that New wires together: the Catalog (venues, events, shows,
// seat maps and availability, with the caches every hold reads), the Holds (claiming seats, and what becomes of a
// hold: cancel, expiry, confirmation) and the Reconciler (the background work: expiring lapsed holds, keeping
// Redis's mirror of the ledger and the shows' ShowInfo current). Their methods are the Service's; a caller that
// needs one part may take just that part.
type Service struct {
	*Catalog
	*Holds
	*Reconciler
}

// New returns a Service. gate may be nil when no show ever has a queue (tests).
func New(store Store, locks Seats, gate Admitter, cfg Config) *Service {
	if cfg.HoldTTL <= 0 {
		cfg.HoldTTL = 10 * time.Minute
	}
	if cfg.MaxSeats <= 0 {
		cfg.MaxSeats = 10
	}
	if cfg.ReconcileEvery <= 0 {
		cfg.ReconcileEvery = 30 * time.Second
	}
	if cfg.InfoCoalesce <= 0 {
		cfg.InfoCoalesce = 100 * time.Millisecond
	}
	if cfg.FanRetention <= 0 {
		cfg.FanRetention = 30 * 24 * time.Hour
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Catalog{store: store, locks: locks, gate: gate, cfg: cfg, log: cfg.Logger, dirty: map[string]bool{}}
	c.seats = &seatCache{catalog: c, log: cfg.Logger}
	h := &Holds{catalog: c, seats: c.seats, store: store, locks: locks, gate: gate, cfg: cfg, log: cfg.Logger,
		window: claimWindow}
	r := &Reconciler{catalog: c, holds: h, seats: c.seats, store: store, locks: locks, cfg: cfg, log: cfg.Logger,
		nudge: make(chan string, 1024)}
	h.expireAt = r.expireAt
	return &Service{Catalog: c, Holds: h, Reconciler: r}
}
