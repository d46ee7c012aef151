package waitroom

import (
	"context"
	"log/slog"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/pow"
	"github.com/flashseat/flashseat/shared/token"
)

// Store keeps queues and runs their atomic steps. waitroom/redis implements it.
type Store interface {
	// Join places user in show's queue, or finds their place: idempotent. receipted is the ticket a verified
	// place receipt proves (0: none), given back if the store forgot the fan while it is still ahead.
	// ErrNoSettings, ErrNoState and *SeqsError ask the caller to restore or reserve and retry. It is Enter with
	// the waiting room's own Ask (no guard), for fans already live.
	Join(ctx context.Context, show, user string, receipted int64) (Entry, error)
	// Enter is Join for a fan's own request: a new place is taken only as ask allows (guard.go); otherwise
	// Entry.Refused says why. A receipted ticket behind the cursor is given back to a fan skipped as absent
	// within ask.TurnHold.
	Enter(ctx context.Context, show, user string, receipted int64, ask Ask) (Entry, error)
	GuardStore
	// Lookup finds user's place without joining; Found is false when they have none.
	Lookup(ctx context.Context, show, user string) (Entry, error)
	// Bypass is a bypass code's step (bypass.go). With g nil it only looks: the fan's live admission, a closed
	// or sold-out show, Refused "pre" or "paused" when the queue admits nobody now, else a zero Entry. With g (a
	// recorded, signed grant) it admits user with it at once, out of the line, among the show's active
	// admissions; a fan already holding a live grant keeps it, and the answer carries theirs.
	Bypass(ctx context.Context, show, user string, g *Grant) (Entry, error)
	// Lines groups users by the line of show's queue each is in (lines.go), in their order: one group, the
	// show's, for a single queue.
	Lines(ctx context.Context, show string, users []string) (map[string][]string, error)
	// JTIPrefix is what the token id of user's admission to show starts with: the line of a partitioned queue
	// (lines.go) that holds the admission, so that its release finds it; lane "" the fan's own lane, else that
	// lane's line for them (the admission a bypass code naming lane gives, before SetLane moves them there).
	JTIPrefix(ctx context.Context, show, user, lane string) (string, error)
	// SetLane holds user to show's lane (admission.Lanes) from now on, as a bypass code names it: their line is
	// that lane's from then on. The caller makes sure they hold no ticket.
	SetLane(ctx context.Context, show, user, lane string) error
	// Admit runs one admission tick: pops up to min(rate x elapsed, maxActive - active) fans with a live
	// heartbeat (none when maxScan is 0), skipping the others, and records a grant for each, atomically. nonce
	// makes jtis unique. The grants are unrecorded until their tokens are stored; the result carries the ones
	// overdue for recording and the cursor that may be recorded (TickResult.Overdue, DurableCursor).
	Admit(ctx context.Context, show, nonce string, grace time.Duration, maxScan int) (TickResult, error)
	// SaveTokens stores signed tokens beside their grants, so every replica answers with the same token, and
	// marks the grants recorded: callers save a token only once its grant is in the record. It returns the
	// show's durable cursor with them recorded (see TickResult.DurableCursor).
	SaveTokens(ctx context.Context, show string, grants []Grant) (int64, error)
	// Grants reads the live grants of users.
	Grants(ctx context.Context, show string, users []string) (map[string]Grant, error)
	// Seqs reads the tickets of users still in the queue.
	Seqs(ctx context.Context, show string, users []string) (map[string]int64, error)
	// Touch refreshes the heartbeats of users (batched by the caller) and returns those not in the queue (left
	// it, or forgotten by a store that lost its data).
	Touch(ctx context.Context, show string, users []string) ([]string, error)
	// Seed returns the show's shuffle seed, creating it if needed.
	Seed(ctx context.Context, show, fresh string) (string, error)
	// DrawLock takes the show's draw lock for ttl; false if another replica holds it. DrawUnlock drops it.
	DrawLock(ctx context.Context, show string, ttl time.Duration) (bool, error)
	DrawUnlock(ctx context.Context, show string) error
	// PreJoiners lists the pre-opening pool.
	PreJoiners(ctx context.Context, show string) ([]string, error)
	// Place writes the drawn order as tickets 1..N and opens the queue to later joins.
	Place(ctx context.Context, show string, ordered []string, digest string) error
	// Fairness reads the draw record (without the recipe).
	Fairness(ctx context.Context, show string) (Fairness, error)
	// Counts reads the queue's counters.
	Counts(ctx context.Context, show string) (Counts, error)
	// Restore rebuilds a show's queue state from the record unless it is there; SetCeiling raises the ticket
	// ceiling to one just reserved in the record (ErrNoState if the state went meanwhile).
	Restore(ctx context.Context, show string, d Durable) error
	SetCeiling(ctx context.Context, show string, ceiling int64) error
	// Exists reports whether the show has a queue config or show info.
	Exists(ctx context.Context, show string) (bool, error)
	// Events delivers show ids whose settings or availability changed, until ctx ends.
	Events(ctx context.Context) <-chan string
}

// Record is the waiting room's durable record (PostgreSQL; waitroom/postgres): what a queue needs to be rebuilt
// after the store lost it. The operator's settings and the admissions are shared/admission's record.
type Record interface {
	// Queue reads a show's record (zero values for a queue never recorded) and the sale's opening.
	Queue(ctx context.Context, show string) (Durable, error)
	// SaveSeed records seed as the show's shuffle seed unless one is recorded; it returns the one in force.
	SaveSeed(ctx context.Context, show, seed string) (string, error)
	// SaveDraw records the written draw's participant count and digest (the first record stays).
	SaveDraw(ctx context.Context, show string, count int64, digest string) error
	// SaveCursor records the admission cursor (it only grows).
	SaveCursor(ctx context.Context, show string, cursor int64) error
	// Reserve raises the ticket ceiling to at least atLeast and by grow, and returns it.
	Reserve(ctx context.Context, show string, atLeast, grow int64) (int64, error)
	BypassRecord
}

// Durable is a queue's record: everything a rebuilt queue starts from.
type Durable struct {
	Seed         string
	Drawn        bool
	DrawCount    int64
	DrawDigest   string
	Cursor       int64 // recorded at most a second behind
	Ceiling      int64 // no ticket above it was ever handed out
	SaleStartsAt time.Time
	Grants       []Grant // live admissions
}

// Counts are the operator's view of a queue.
type Counts struct {
	Waiting       int64 `json:"waiting"`
	Active        int64 `json:"active"`
	AdmittedTotal int64 `json:"admittedTotal"`
	SkippedTotal  int64 `json:"skippedTotal"`
	// Engaged: fans wait in line now. In threshold mode the queue's own state; Service.Settings answers true for
	// mode "always" and false for "off".
	Engaged bool `json:"engaged"`
	// ActiveUsers is Active under the name threshold mode's limit has (activeUsersThreshold).
	ActiveUsers int64 `json:"activeUsers"`
	// ArrivalsPerMinute is the show's arrivals (new places, admissions at once) over the last minute.
	ArrivalsPerMinute int64 `json:"arrivalsPerMinute"`
	// BypassedTotal is the fans admitted at once by a bypass code.
	BypassedTotal int64 `json:"bypassedTotal"`
	// PartitionSizes is the fans waiting in each line of the queue (lines.go), the show's own first, lane by
	// lane when it has lanes: one figure, Waiting, for a single queue.
	PartitionSizes []int64 `json:"partitionSizes"`
	// Lanes is each lane's figures, in the settings' order (lanes.go); empty for a show without lanes.
	Lanes []LaneCounts `json:"lanes"`
}

// LaneCounts are one lane's figures: its fans waiting, its live admissions, and everyone it admitted (by turn or
// by a code naming it).
type LaneCounts struct {
	Name     string  `json:"name"`
	Share    float64 `json:"share"`
	Waiting  int64   `json:"waiting"`
	Active   int64   `json:"active"`
	Admitted int64   `json:"admitted"`
}

// Options tune a Service; zero values take the defaults.
type Options struct {
	Tick           time.Duration // admission tick per show, default 200 ms
	Grace          time.Duration // heartbeat grace before a fan counts as gone, default 30 s
	HeartbeatEvery time.Duration // batched heartbeat flush, default 2 s
	// HeartbeatRefresh is how often a streaming fan's heartbeat is rewritten, default a quarter of Grace, never
	// more often than HeartbeatEvery (heartbeat.go).
	HeartbeatRefresh time.Duration
	MaxScan          int // fans popped per tick at most (admitted + skipped), default 5000
	MaxStreams       int // streams one fan may hold open per show on one replica, default 8
	Logger           *slog.Logger
	// Observe, if set, is told of every tick this replica runs (for metrics): its result (Grants are the
	// fans this replica admitted), how long it took, and its error.
	Observe func(snap TickResult, took time.Duration, err error)
	// PoW issues and verifies the bot protection's proofs of work; nil asks none (guard.go).
	PoW *pow.Issuer
	// Human is the deployment's human check, HumanWidget what a page needs to render it; nil: none configured.
	Human       HumanCheck
	HumanWidget any
	// Settings reads a show's settings for the guard (the edge's gate, cached for a second); nil: the keeper.
	Settings SettingsReader
	// Guests limits minting guest identities per address prefix (guest.go); zero values take the defaults.
	Guests GuestPolicy
	// OnGuard, if set, is told of the guard's work on this replica (for metrics): challenges issued, proofs
	// taken, refusals by reason.
	OnGuard func(GuardEvent)
	// Journal, if set, records each fan's first place and the refused joins for the after-sale report.
	Journal Journal
}

// Service is the waiting room: joins, status, admission ticks, draws and the local fan-out hub.
type Service struct {
	store    Store
	record   Record
	queues   *admission.Keeper
	issuer   *token.Issuer
	receipts *token.ReceiptVerifier
	opt      Options
	log      *slog.Logger
	Hub      *Hub
	guard    GuardStore
	guests   GuestStore         // nil: the store keeps no guest counts, and minting is not limited
	regs     RegistrationRecord // nil: the record keeps no registrations (registration.go)
	access   AccessStore        // nil: the store keeps no copy of them
	flights  singleflight.Group // restores and reservations, one at a time per show on this replica
	trickle  trickles           // the store-down trickle's buckets and memory (trickle.go)

	mu     sync.Mutex
	polled map[string]map[string]struct{} // show -> users who polled since the last heartbeat flush

	// Per-show memory, each a bounded LRU: full, it forgets the show least recently touched, never all at once
	// (which would make every show re-seed, re-log and re-record in the same tick). loggedAt and cursors are read
	// and written under mu, each check-and-set in one step.
	seeded   *lru.Cache[string, struct{}]
	loggedAt *lru.Cache[string, time.Time] // kind and show -> when its last failure was logged
	cursors  *lru.Cache[string, savedCursor]
	failedAt *lru.Cache[string, time.Time] // show -> when recording its admissions last failed here (none: it worked)
}

// Bounds of the per-show memory.
const (
	maxSeeded   = 100000
	maxLoggedAt = 10000
	maxCursors  = 100000
	maxFailedAt = 10000
)

type savedCursor struct {
	cursor int64
	at     time.Time
}

// newLRU returns an empty bounded LRU; lru.New errs only for a size below 1.
func newLRU[V any](size int) *lru.Cache[string, V] {
	c, _ := lru.New[string, V](size)
	return c
}

// New returns a service over store and its record, with the shows' settings and admissions kept by queues,
// signing admission tokens and place receipts with issuer.
func New(store Store, record Record, queues *admission.Keeper, issuer *token.Issuer, opt Options) *Service {
	if opt.Tick <= 0 {
		opt.Tick = 200 * time.Millisecond
	}
	if opt.Grace <= 0 {
		opt.Grace = 30 * time.Second
	}
	if opt.HeartbeatEvery <= 0 {
		opt.HeartbeatEvery = 2 * time.Second
	}
	if opt.MaxScan <= 0 {
		opt.MaxScan = 5000
	}
	if opt.MaxStreams <= 0 {
		opt.MaxStreams = 8
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Guests == (GuestPolicy{}) {
		opt.Guests = DefaultGuestPolicy()
	}
	guests, _ := store.(GuestStore)
	regs, _ := record.(RegistrationRecord)
	access, _ := store.(AccessStore)
	return &Service{store: store, guard: store, guests: guests, regs: regs, access: access, record: record, queues: queues, issuer: issuer,
		receipts: token.NewReceiptVerifier(issuer, 5*time.Second),
		opt:      opt, log: opt.Logger, Hub: NewHub(), polled: map[string]map[string]struct{}{},
		seeded: newLRU[struct{}](maxSeeded), loggedAt: newLRU[time.Time](maxLoggedAt), cursors: newLRU[savedCursor](maxCursors),
		failedAt: newLRU[time.Time](maxFailedAt)}
}
