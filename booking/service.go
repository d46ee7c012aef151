package booking

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/flashseat/flashseat/shared/token"
)

// Store is the Postgres ledger as the Service needs it. booking/postgres implements it.
type Store interface {
	CreateVenue(ctx context.Context, v *Venue) error // assigns the venue's and its halls' IDs
	CreateEvent(ctx context.Context, e *Event) error
	CreateShow(ctx context.Context, s *Show) error // ErrNotFound wrapped when the event or hall is unknown
	Show(ctx context.Context, id string) (Show, error)
	Layout(ctx context.Context, showID string) ([]Seat, error)
	Search(ctx context.Context, q Search) ([]EventShows, error)
	UpcomingShows(ctx context.Context, now time.Time) ([]string, error)
	SoldSeats(ctx context.Context, showID string) ([]string, error)
	Revenue(ctx context.Context, showID string) (int64, error)
	// ShowFigures lists the shows not started before now minus six hours, soonest first, with revenue,
	// confirmed bookings and payment failures (the console's overview); counts are left to the caller.
	ShowFigures(ctx context.Context, now time.Time) ([]ShowOverview, error)
	// SetSaleStart moves a show's sale opening and returns the show as now recorded.
	SetSaleStart(ctx context.Context, showID string, at time.Time) (Show, error)
	// CloseSale records the sale of a show closed at the given time and returns the show as now recorded.
	CloseSale(ctx context.Context, showID string, at time.Time) (Show, error)
	// UserBookings lists a user's most recent bookings, newest first.
	UserBookings(ctx context.Context, userID string, limit int) ([]Booking, error)

	// BumpEpoch starts a new fencing epoch for the show and returns it.
	BumpEpoch(ctx context.Context, showID string) (int64, error)
	// CreateHold records a HELD booking and its seats' fences. ErrStale when a seat has a newer fence on record.
	CreateHold(ctx context.Context, b *Booking) error
	Booking(ctx context.Context, id string) (Booking, error)
	// BookingsOf lists a user's bookings, newest first, at most limit.
	BookingsOf(ctx context.Context, userID string, limit int) ([]Booking, error)
	// Cancel moves the user's HELD booking to CANCELLED.
	Cancel(ctx context.Context, id, userID string) (Booking, error)
	// ExpireDue marks HELD bookings past their expiry EXPIRED (of one show, or all when showID is empty) and
	// returns them. Safe to run on several replicas at once: each booking is expired by exactly one.
	ExpireDue(ctx context.Context, showID string, now time.Time, limit int) ([]Booking, error)
	// Expire marks one HELD booking EXPIRED (its locks were lost).
	Expire(ctx context.Context, id string) (Booking, error)
	// Confirm moves a HELD (or PAYMENT_PENDING) booking to CONFIRMED and writes its seats into the ledger, in one
	// transaction that checks the fencing token. ErrStale, ErrSeatsUnavailable, ErrNotHeld.
	Confirm(ctx context.Context, id string) (Booking, error)
	// Extend moves a HELD booking's expiry.
	Extend(ctx context.Context, id string, until time.Time) error

	// BeginIdempotent claims (user, scope, key) for a request with the given hash. If it was claimed before it
	// returns the record: a finished one carries ResultID, a pending one does not.
	BeginIdempotent(ctx context.Context, userID, scope, key, hash string) (rec IdempotencyRecord, claimed bool, err error)
	FinishIdempotent(ctx context.Context, userID, scope, key, resultID string) error
	AbortIdempotent(ctx context.Context, userID, scope, key string) error
}

// IdempotencyRecord is what is known about an Idempotency-Key already used.
type IdempotencyRecord struct {
	RequestHash string
	ResultID    string // empty while the first request is still running
}

// Locks is Redis as the Service needs it: the seat locks, the sold set mirror, counters and events. booking/redis
// implements it.
type Locks interface {
	// Claim locks every seat of the claim for the booking, or none.
	Claim(ctx context.Context, c Claim) (ClaimResult, error)
	// SetEpoch installs a fencing epoch (and the show's sold seats) after Redis was found without one.
	SetEpoch(ctx context.Context, showID string, epoch int64, sold []string) error
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
	// AddSold mirrors the ledger's sold seats into Redis (after Redis lost them).
	AddSold(ctx context.Context, showID string, seatIDs []string) error
	// Available reads the available count of each show's ShowInfo in one round trip; shows without one are
	// missing from the result.
	Available(ctx context.Context, showIDs []string) (map[string]int, error)
	// PublishInfo writes the show's ShowInfo hash and, when announce is set, publishes the show's id on the
	// availability channel.
	PublishInfo(ctx context.Context, s Show, c Counts, now time.Time, announce bool) error
	// PublishSeats announces seat changes on the show's seat channel.
	PublishSeats(ctx context.Context, showID string, evs []SeatEvent) error
	// AddConflicts adds n to the show's conflict counter.
	AddConflicts(ctx context.Context, showID string, n int64) error
	// Counters returns the show's hold and conflict counters.
	Counters(ctx context.Context, showID string) (holds, conflicts int64, err error)
	// AnnounceShow tells every replica that an operator changed the show's definition (sale opening, close).
	AnnounceShow(ctx context.Context, showID string) error
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
}

// ClaimResult is the outcome of a Claim. Exactly one of the flags describes a failure, or OK is set.
type ClaimResult struct {
	OK      bool
	Fence   int64
	Taken   []string // held or sold by others
	NoEpoch bool     // Redis has no fencing epoch for the show (fresh show, or Redis lost its data)
	OverCap bool     // the user would hold more than UserCap seats
}

// Admitter checks the waiting room's admission for a request, and ends an admission once used (recorded
// durably, so a rebuilt waiting room still refuses the token); shared/admission's Gate implements it.
type Admitter interface {
	Check(ctx context.Context, showID, userID, raw string) (*token.Admission, error)
	Release(ctx context.Context, showID, userID, jti string, exp time.Time) error
}

// Config tunes a Service.
type Config struct {
	HoldTTL        time.Duration
	MaxSeats       int
	ReconcileEvery time.Duration
	InfoCoalesce   time.Duration // at most one ShowInfo rewrite per show per this interval
	Now            func() time.Time
	Logger         *slog.Logger
	OnHold         func() // metrics hooks; nil is fine
	OnConflict     func()
	OnExpired      func(n int)
}

// Service is the booking behaviour.
type Service struct {
	store Store
	locks Locks
	gate  Admitter
	cfg   Config
	log   *slog.Logger

	cache      catalogCache
	mu         sync.Mutex
	dirty      map[string]bool // shows whose ShowInfo needs a rewrite
	snaps      snapshots
	conflicted map[string]bool   // shows with refusals counted since the last flush (countConflict)
	published  map[string]Counts // the counts last written to each show's ShowInfo
	nudge      chan string       // shows with a seat lock that just expired
	restoreMu  sync.Mutex        // one fencing-epoch restore at a time
	offers     OfferLookup       // which bookings are waitlist offers (set by NewWaitlist); nil: none are
}

// New returns a Service. gate may be nil when no show ever has a queue (tests).
func New(store Store, locks Locks, gate Admitter, cfg Config) *Service {
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
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{store: store, locks: locks, gate: gate, cfg: cfg, log: cfg.Logger,
		dirty: map[string]bool{},
		nudge: make(chan string, 1024)}
}

// HoldTTL is how long a hold lasts.
func (s *Service) HoldTTL() time.Duration { return s.cfg.HoldTTL }

// MaxSeats is the per-booking and per-user seat cap.
func (s *Service) MaxSeats() int { return s.cfg.MaxSeats }

// Show returns a show, from a cache: a show's definition changes only by an operator (sale opening, close),
// and then every replica drops its copy at once (ShowChanged).
func (s *Service) Show(ctx context.Context, id string) (Show, error) {
	if sh, ok := s.cache.shows.Load(id); ok {
		s.cache.touch(id)
		return sh.(Show), nil
	}
	sh, err := s.store.Show(ctx, id)
	if err != nil {
		return Show{}, err
	}
	s.cache.store(&s.cache.shows, id, sh)
	return sh, nil
}

// Layout returns the seats of a show with prices, in map order, from a cache.
func (s *Service) Layout(ctx context.Context, showID string) ([]Seat, error) {
	l, _, err := s.layoutIndex(ctx, showID)
	return l, err
}

// layoutIndex returns the show's layout and its seats' positions in it, from a cache.
func (s *Service) layoutIndex(ctx context.Context, showID string) ([]Seat, map[string]int, error) {
	if e, ok := s.cache.layouts.Load(showID); ok {
		l := e.(*layoutEntry)
		return l.seats, l.index, nil
	}
	if _, err := s.Show(ctx, showID); err != nil {
		return nil, nil, err
	}
	seats, err := s.store.Layout(ctx, showID)
	if err != nil {
		return nil, nil, err
	}
	idx := make(map[string]int, len(seats))
	for i, st := range seats {
		idx[st.ID] = i
	}
	s.cache.store(&s.cache.layouts, showID, &layoutEntry{seats: seats, index: idx})
	return seats, idx, nil
}

// catalogCache keeps shows and layouts, which never change once created. Every hold reads both, so they sit
// in sync.Maps, read without a lock: a mutex here was one cache line bounced between all CPUs per request.
//
// The maps are bounded by an LRU of show ids (golang-lru), which when full forgets the show least recently used,
// never every show at once: dropping the whole cache in the middle of a sale sent every hold of every show to
// PostgreSQL together. Reads touch the LRU only one time in touchEvery, so the hot path stays lock-free while a
// show in use still counts as recently used.
type catalogCache struct {
	shows   sync.Map // show id -> Show
	layouts sync.Map // show id -> *layoutEntry

	mu    sync.Mutex                   // serializes changes to the maps with the LRU's, so the two agree
	order *lru.Cache[string, struct{}] // the show ids in the maps; nil until the first store
}

const (
	catalogCacheSize = 10000 // shows; each with its layout
	touchEvery       = 64
)

type layoutEntry struct {
	seats []Seat
	index map[string]int // seat id -> position in seats
}

// store caches v under key in m (shows or layouts). Only what the store returned is cached (unknown ids never
// are).
func (c *catalogCache) store(m *sync.Map, key string, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.order == nil {
		c.order, _ = lru.NewWithEvict(catalogCacheSize, func(id string, _ struct{}) { // errs only for size < 1
			c.shows.Delete(id)
			c.layouts.Delete(id)
		})
	}
	c.order.Add(key, struct{}{}) // may evict another show, under c.mu
	m.Store(key, v)
}

// touch marks a show as used, one read in touchEvery.
func (c *catalogCache) touch(id string) {
	if rand.N(touchEvery) == 0 {
		c.mu.Lock()
		if c.order != nil {
			c.order.Get(id)
		}
		c.mu.Unlock()
	}
}

// forget drops a show's cached definition (its layout never changes).
func (c *catalogCache) forget(id string) {
	c.mu.Lock()
	c.shows.Delete(id)
	c.mu.Unlock()
}

// markDirty schedules a ShowInfo rewrite for the show. Rewrites are coalesced: a burst of holds on a hot show
// costs one rewrite per InfoCoalesce, off the hold's critical path.
func (s *Service) markDirty(showID string) {
	s.mu.Lock()
	s.dirty[showID] = true
	s.mu.Unlock()
}
