// Package waitroom is the virtual waiting room's domain: a fan joins a show's queue, is told an honest position
// and ETA, and is admitted with a signed admission token at the operator's rate while capacity allows.
//
// Fairness: fans who join before the sale opens are placed in a uniformly random order at opening (see Order and
// Commit: the seed is committed to before opening and revealed after); fans who join later are served first come,
// first served. A fan's place is a sequence number (seq); the queue publishes one admitted-through cursor per tick,
// and a waiting fan's position is seq - cursor: 1-based, unique, and never growing, because seqs are assigned
// once and the cursor only moves forward. Fans who left (no heartbeat within a grace period) are skipped when
// their turn comes, so the cursor may jump: positions are an upper bound that falls faster than the admit rate.
//
// The package holds the types, errors and behaviour; the Store (waitroom/redis) keeps the state and runs the
// atomic steps; waitroom/http serves it.
package waitroom

import (
	"errors"
	"fmt"
	"time"

	"github.com/flashseat/flashseat/shared/store"
)

// Status is where a fan stands in a show's queue. The JSON values are the contract's.
type Status string

// The statuses of the contract.
const (
	Waiting  Status = "waiting"
	Admitted Status = "admitted"
	SoldOut  Status = "sold_out"
	Closed   Status = "closed"
)

// Errors the waiting room returns; callers compare with errors.Is.
var (
	ErrUnknownShow    = errors.New("waitroom: unknown show")             // neither a queue nor show info exists
	ErrNotInQueue     = errors.New("waitroom: not in the queue")         // status asked before joining
	ErrDrawPending    = errors.New("waitroom: opening draw under way")   // the pre-opening shuffle is being written
	ErrInvalid        = errors.New("waitroom: invalid input")            // a malformed id or setting
	ErrUnavailable    = fmt.Errorf("waitroom: %w", store.ErrUnavailable) // Redis cannot be reached; retry later
	ErrTooManyStreams = errors.New("waitroom: too many streams")         // one fan holds too many streams of a show

	// The store lost (or never had) part of a show's state; the Service restores it from the records and retries.
	ErrNoSettings = errors.New("waitroom: queue settings not in the store") // restore via shared/admission
	ErrNoState    = errors.New("waitroom: queue state not in the store")    // restore from the Record
)

// SeqsError means every ticket reserved in the Record has been handed out: the Service reserves more (above
// LastSeq, the highest handed out) and retries. Reserving first is what keeps a ticket, once promised, unique
// after a rebuild: a rebuilt queue hands out tickets only above the recorded ceiling.
type SeqsError struct{ LastSeq int64 }

func (e *SeqsError) Error() string {
	return fmt.Sprintf("waitroom: tickets exhausted at %d", e.LastSeq)
}

// LineError is a store's request to restore or reserve (ErrNoState, *SeqsError) for one line of a partitioned
// queue (lines.go): the line's state is restored, or its tickets reserved, apart from the others'.
type LineError struct {
	Line string
	Err  error
}

func (e *LineError) Error() string { return e.Err.Error() + " (line " + e.Line + ")" }
func (e *LineError) Unwrap() error { return e.Err }

// Place is a fan's standing, as join and status return it.
type Place struct {
	Status Status
	// Seq is the fan's ticket number; zero before the opening draw gave them one.
	Seq int64
	// Position is 1-based (seq - cursor); zero while the fan waits for the opening draw.
	Position int64
	// ETA is the expected wait until admission, from the measured admission rate.
	ETA time.Duration
	// OpensAt is the sale's opening while the fan waits for the draw.
	OpensAt time.Time
	// Grant is set when Status is Admitted.
	Grant *Grant
	// Paused: the queue is on, but the operator has paused admission; the place is kept, the ETA is unknown.
	Paused bool
	// Receipt is the signed place receipt (token.Receipt) of a waiting fan, to present again on a re-join.
	Receipt string
	// Shadow: a suspected bot's place in the infinite queue (guard.go). It looks like any other and never comes up.
	Shadow bool
}

// Entry is a fan's record as the store reads it: a phase-like kind plus the numbers to compute a Place from.
type Entry struct {
	Status  Status
	Pre     bool // waiting for the opening draw
	Pending bool // sale open, draw not written yet
	Seq     int64
	Cursor  int64
	OpensAt time.Time
	Grant   *Grant
	Found   bool // false: the fan is not in the queue (Lookup only)
	Paused  bool // admission paused by the operator
	// AdmitPerSecond is the configured rate, for an ETA before this replica has measured one.
	AdmitPerSecond float64
	Shadow         bool   // a suspect's shadow place (Seq is its fake ticket)
	Refused        string // Enter: the verdict that refused a new place (guard.go); Bypass: why nobody is admitted now
	// Passed: the fan's receipted ticket is one the cursor had passed before Redis lost the queue; ask again with
	// Ask.Returning saying whether the admission record holds an admission of the fan.
	Passed bool
	// Gap is what a rebuild left empty ahead of the cursor (TickResult.Gap).
	Gap Gap
	// Lines, for a partitioned queue, is its lines as this replica last saw them, the fan's own as the store
	// just read it: Seq's position follows from them, and from At, the ticket's floor mark (lines.go), which the
	// replica's view may not hold yet.
	Lines Lines
	At    int64
}

// Grant is one admission: the token's id, holder and lifetime. Token is the signed JWT once it has been signed.
type Grant struct {
	UserID    string
	JTI       string
	IssuedAt  time.Time
	ExpiresAt time.Time
	Token     string
}

// Phase is a show queue's state as the admission tick sees it.
type Phase string

// Phases of a show's queue.
const (
	PhaseOpen    Phase = "open"     // admitting
	PhasePre     Phase = "pre"      // sale not open yet: joins go to the pre-opening pool
	PhasePending Phase = "pending"  // sale open, the pre-opening draw not written yet
	PhasePaused  Phase = "paused"   // queue on, admission paused by the operator: places kept, nobody admitted
	PhaseSoldOut Phase = "sold_out" // no free and no held seats: admission paused
	PhaseClosed  Phase = "closed"   // queue switched off
)

// TickResult is a show queue's state after one admission tick: the one per-show update every replica reads per
// tick and turns into each local fan's position in memory.
type TickResult struct {
	Show           string
	Phase          Phase
	Cursor         int64 // seq of the last fan taken off the queue (admitted or skipped)
	LastSeq        int64 // highest seq handed out
	Waiting        int64 // fans in the queue, including the pre-opening pool
	Active         int64 // admission grants holding a slot
	AdmittedTotal  int64
	SkippedTotal   int64
	AdmitPerSecond float64 // the operator's setting in force at this tick
	MaxActive      int64   // the active slots in force: in threshold mode at most the active threshold
	// Engaged: fans wait in line now (always in mode "always"; in threshold mode while engaged).
	Engaged bool
	// ArrivalsPerMinute is the show's arrivals (new places and admissions at once) over the last minute.
	ArrivalsPerMinute int64
	OpensAt           time.Time
	At                time.Time // Redis time of the tick
	Grants            []Grant   // grants made by this tick (only on the replica that ran it), not yet recorded
	// Overdue are earlier grants still not recorded (their admitter died between admitting and recording, or the
	// record was down): the replica that ran this tick records them.
	Overdue []Grant
	// DurableCursor is the cursor, held below the ticket of every grant not yet recorded: the highest cursor that
	// may be recorded without a lost store taking an admission with it that the record would not bring back.
	DurableCursor int64
	// Gap is what a rebuild left ahead of the cursor that nobody holds (Gap.Position).
	Gap Gap
	// Lines is a partitioned queue's every line (lines.go); nil for a single queue. Cursor, LastSeq, Waiting
	// and the totals are then the lines' sums, and positions follow from Lines.
	Lines Lines
}

// Position is the position of a fan holding ticket at this tick.
func (r TickResult) Position(ticket int64) int64 {
	if r.Lines != nil {
		return r.Lines.Position(ticket)
	}
	return r.Gap.Position(ticket, r.Cursor)
}

// Rebuilding reports whether a rebuild's gap is still ahead of the cursor, in any line.
func (r TickResult) Rebuilding() bool {
	for _, l := range r.Lines {
		if l.Gap.End > 0 {
			return true
		}
	}
	return r.Gap.End > 0
}

// Passed reports whether the queue has taken ticket off its line (admitted or skipped).
func (r TickResult) Passed(ticket int64) bool {
	if r.Lines != nil {
		return r.Lines.Passed(ticket)
	}
	return ticket > 0 && ticket <= r.Cursor
}

// Gap is the part of the line a rebuild left empty. A queue rebuilt from its record starts its new tickets above
// the ceiling reserved before the loss (durable.go), so the tickets between the cursor and that ceiling are
// fans' who may still come back with their receipts, and tickets never handed out. Until the cursor passes End,
// Empty is how many of them nobody in line holds now. Zero outside a rebuild.
type Gap struct {
	End   int64 // the rebuilt ceiling: the highest ticket handed out before the loss, at most
	Empty int64 // tickets above the cursor, up to End, held by nobody in line
}

// Position is a waiting fan's 1-based position given the queue's cursor, not counting the tickets the gap holds
// empty ahead of it: the fans ahead of a fan behind the gap, not ticket numbers. A fan within it (back with its
// receipt) is told its ticket's place, as before the loss. Zero when seq is not yet known.
func (g Gap) Position(seq, cursor int64) int64 {
	p := Position(seq, cursor)
	if g.Empty > 0 && seq > g.End && cursor < g.End {
		p = max(1, p-g.Empty)
	}
	return p
}

// progress is how far the line has moved, for the rate meter: the cursor, plus the empty tickets ahead of it in the
// gap, so that passing a stretch of tickets nobody holds counts as no fans served. A fan given back its ticket
// within the gap moves it back by one, which the meter takes as a new start.
func (g Gap) progress(cursor int64) int64 {
	if g.Empty > 0 && cursor < g.End {
		return cursor + g.Empty
	}
	return cursor
}

// Status maps a phase to what a waiting fan is told.
func (p Phase) Status() Status {
	switch p {
	case PhaseSoldOut:
		return SoldOut
	case PhaseClosed:
		return Closed
	}
	return Waiting
}

// Position is a waiting fan's 1-based position given the queue's cursor; zero when seq is not yet known.
func Position(seq, cursor int64) int64 {
	if seq <= 0 {
		return 0
	}
	if seq <= cursor {
		return 1 // taken off the queue this instant; the admission event follows
	}
	return seq - cursor
}
