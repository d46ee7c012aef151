package loadtest

import (
	"sync"
	"time"
)

// Step names one kind of request (or wait) the report measures.
type Step string

// The steps. Admitted is not a request: its latency is the fan's wait from join to the admitted event.
const (
	StepAuth     Step = "auth"
	StepJoin     Step = "join"
	StepStatus   Step = "status" // polling the queue when the event stream could not be held
	StepAdmitted Step = "admitted"
	StepSeatMap  Step = "seatmap"
	StepHold     Step = "hold"
	StepPay      Step = "pay"
	StepPoll     Step = "poll"
	StepCancel   Step = "cancel"
	StepProbe    Step = "probe"
)

// StepOrder is the order steps appear in reports.
var StepOrder = []Step{StepAuth, StepJoin, StepStatus, StepAdmitted, StepSeatMap, StepHold, StepPay, StepPoll, StepCancel, StepProbe}

// Sample is one observation: when it ended (offset from the run's start), how long it took, and its outcome (an
// HTTP status such as "201", or "err:<kind>" when no answer came).
type Sample struct {
	At      time.Duration `json:"at"`
	Latency time.Duration `json:"latency"`
	Outcome string        `json:"outcome"`
}

// Recorder collects samples from many goroutines. One mutex is enough: a sample costs a slice append, far below
// the cost of the HTTP request it describes.
type Recorder struct {
	start time.Time

	mu    sync.Mutex
	steps map[Step][]Sample
}

// NewRecorder starts the run's clock at start.
func NewRecorder(start time.Time) *Recorder {
	return &Recorder{start: start, steps: map[Step][]Sample{}}
}

// Start is the instant every offset is measured from.
func (r *Recorder) Start() time.Time { return r.start }

// Since is the offset of t from the run's start.
func (r *Recorder) Since(t time.Time) time.Duration { return t.Sub(r.start) }

// Observe records a step that began at began and ends now.
func (r *Recorder) Observe(step Step, began time.Time, outcome string) {
	now := time.Now()
	r.mu.Lock()
	r.steps[step] = append(r.steps[step], Sample{At: now.Sub(r.start), Latency: now.Sub(began), Outcome: outcome})
	r.mu.Unlock()
}

// Samples returns a copy of everything recorded so far, by step.
func (r *Recorder) Samples() map[Step][]Sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[Step][]Sample, len(r.steps))
	for k, v := range r.steps {
		out[k] = append([]Sample(nil), v...)
	}
	return out
}

// PositionObs is a queue position a fan was told over SSE, and when it heard it.
type PositionObs struct {
	At       time.Duration `json:"at"`
	Position int           `json:"position"`
}

// Probe is a booking-route request a fan made without an admission token while still waiting; the gate must
// refuse it.
type Probe struct {
	At     time.Duration `json:"at"`
	Status int           `json:"status"` // 0: no answer
}

// Fan outcomes.
const (
	OutcomeConfirmed = "confirmed"     // paid, booking CONFIRMED
	OutcomeAbandoned = "abandoned"     // held and walked away on purpose
	OutcomeCancelled = "cancelled"     // gateway error, then cancelled the hold
	OutcomePending   = "pending"       // payment still pending when the fan stopped polling
	OutcomeExpired   = "expired"       // the hold expired or was lost (410)
	OutcomeSoldOut   = "sold-out"      // the queue said sold_out, or no seat was AVAILABLE
	OutcomeClosed    = "closed"        // the queue said closed
	OutcomePatience  = "patience"      // gave up waiting or retrying
	OutcomeRefused   = "refused"       // the admission token was refused while valid
	OutcomeTokenGone = "token-expired" // the admission token expired before the fan was done
	OutcomeError     = "error"         // an answer the contract does not allow, or no answer
	OutcomeCutOff    = "cut-off"       // the run's time bound ended the fan
	OutcomeStormDone = "storm-done"    // hold-storm client finished its time
)

// Fan is everything one fan saw. A fan's goroutine owns it until the run ends; only then is it read.
type Fan struct {
	ID     int    `json:"id"`
	UserID string `json:"userId"`

	Arrived    time.Duration `json:"arrived"`
	Joined     time.Duration `json:"joined"` // 0 until the join answered
	JoinStatus string        `json:"joinStatus,omitempty"`

	Positions []PositionObs `json:"positions,omitempty"`
	// Ticket is the fan's place in line (its seq) when the stream's event ids reveal it; 0 when unknown.
	Ticket int64 `json:"ticket,omitempty"`
	// IssuedAt is the admission token's iat claim (Unix seconds, the contract's precision); 0 when unknown.
	IssuedAt   int64         `json:"issuedAt,omitempty"`
	Admitted   bool          `json:"admitted"`
	AdmittedAt time.Duration `json:"admittedAt,omitempty"`
	Token      string        `json:"-"`

	// TokenStatus is the status of the first booking-route request made with the admission token (0: none made).
	TokenStatus int `json:"tokenStatus,omitempty"`
	// TokenLate says that first answer came after the token's exp claim: a refusal then is the token expiring,
	// not the gate failing an admitted fan.
	TokenLate bool  `json:"tokenLate,omitempty"`
	TokenExp  int64 `json:"tokenExp,omitempty"` // the token's exp claim, Unix seconds
	// TokenRefusal says, when that first answer was 401 or 403, which route gave it and why (refusal).
	TokenRefusal string `json:"tokenRefusal,omitempty"`
	// RefusedAt is when a booking route refused the fan's admission token while it was valid (0: never).
	RefusedAt time.Duration `json:"refusedAt,omitempty"`

	Probes []Probe `json:"probes,omitempty"`

	// Streamed says the fan heard at least one event over its queue stream; Polled, that it fell back to polling
	// the status because the stream could not be held.
	Streamed bool `json:"streamed,omitempty"`
	Polled   bool `json:"polled,omitempty"`

	// Rejoins counts joins made again because the waiting room had forgotten the fan (its store was lost);
	// PlaceLost says how the fan lost its place in line, if it did ("" when it kept it).
	Rejoins   int    `json:"rejoins,omitempty"`
	PlaceLost string `json:"placeLost,omitempty"`

	Pay       PayBehaviour `json:"pay,omitempty"`
	BookingID string       `json:"bookingId,omitempty"`
	SeatIDs   []string     `json:"seatIds,omitempty"`
	Holds     int          `json:"holds,omitempty"`     // successful holds
	Conflicts int          `json:"conflicts,omitempty"` // 409s
	Outcome   string       `json:"outcome"`
	Detail    string       `json:"detail,omitempty"`
}

// QueueSample is one reading of the operator's view of the show: queue depth and seat counts.
type QueueSample struct {
	At            time.Duration `json:"at"`
	Waiting       int           `json:"waiting"`
	Active        int           `json:"active"`
	AdmittedTotal int           `json:"admittedTotal"`
	Available     int           `json:"available"`
	Held          int           `json:"held"`
	Booked        int           `json:"booked"`
}

// Run is the raw record of one scenario played against one target.
type Run struct {
	Scenario  Scenario      `json:"scenario"`
	Target    string        `json:"target"`
	ShowID    string        `json:"showId"`
	StartedAt time.Time     `json:"startedAt"`
	SaleOpens time.Duration `json:"saleOpens"` // offset of the sale opening from StartedAt
	Elapsed   time.Duration `json:"elapsed"`

	// NoSeatsAt is when a fan first found no seat AVAILABLE (0: never); StreamFailures counts event streams that
	// ended without a verdict, after which the fan fell back to polling.
	NoSeatsAt      time.Duration `json:"noSeatsAt,omitempty"`
	StreamFailures int           `json:"streamFailures"`
	// Work is the proof of work the fans did to join.
	Work Work `json:"work"`
	// StormWindow is when the hold-storm's clients hammered, as offsets from StartedAt.
	StormFrom time.Duration `json:"stormFrom,omitempty"`
	StormTo   time.Duration `json:"stormTo,omitempty"`

	Steps    map[Step][]Sample `json:"-"`
	Fans     []*Fan            `json:"-"`
	Timeline []QueueSample     `json:"-"`

	// Baseline is the same hold-storm played against the row-lock design, when asked for.
	Baseline *Run `json:"-"`
}

// Part is what one process of a crowd played by several records: its fans and its requests, on the clock of the
// whole run (offsets from the same StartedAt), so that parts merge into one Run.
type Part struct {
	Fans           []*Fan
	Steps          map[Step][]Sample
	NoSeatsAt      time.Duration // 0: its fans never found the hall without a free seat
	StreamFailures int
	Work           Work
}

// Work is the proof of work fans did to join a show whose bot protection asked for it.
type Work struct {
	Solved int64         `json:"solved"` // challenges solved
	Hashes int64         `json:"hashes"` // hashes tried
	Time   time.Duration `json:"time"`   // spent solving, added up over the fans
}

// Add merges a part into r: fans and samples are appended, the earliest "no seat" wins, failures add up. The
// fairness check then runs over every fan of every part, whose tickets and admission times come from the one
// waiting room, so one global order judges them all.
func (r *Run) Add(p *Part) {
	r.Fans = append(r.Fans, p.Fans...)
	if r.Steps == nil {
		r.Steps = map[Step][]Sample{}
	}
	for step, ss := range p.Steps {
		r.Steps[step] = append(r.Steps[step], ss...)
	}
	if p.NoSeatsAt > 0 && (r.NoSeatsAt == 0 || p.NoSeatsAt < r.NoSeatsAt) {
		r.NoSeatsAt = p.NoSeatsAt
	}
	r.StreamFailures += p.StreamFailures
	r.Work.Solved += p.Work.Solved
	r.Work.Hashes += p.Work.Hashes
	r.Work.Time += p.Work.Time
}
