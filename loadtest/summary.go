package loadtest

import (
	"sort"
	"time"
)

// Summary is everything the report shows about a run.
type Summary struct {
	Scenario  Scenario      `json:"scenario"`
	Target    string        `json:"target"`
	ShowID    string        `json:"showId"`
	StartedAt time.Time     `json:"startedAt"`
	Elapsed   time.Duration `json:"elapsed"`
	SaleOpens time.Duration `json:"saleOpens"`

	Steps       map[Step]Stats `json:"steps"`
	FanOutcomes map[string]int `json:"fanOutcomes"`
	// PayOutcomes breaks the outcomes of fans who held seats down by their payment behaviour.
	PayOutcomes map[PayBehaviour]map[string]int `json:"payOutcomes,omitempty"`
	// Why fans ended in error, refused or patience: detail → fans.
	Reasons   map[string]int `json:"reasons,omitempty"`
	Fans      int            `json:"fans"`
	Admitted  int            `json:"admitted"`
	Confirmed int            `json:"confirmed"`
	SeatsSold int            `json:"seatsSold"` // seats of the bookings the crowd saw confirmed

	// SoldOutAfter is the time from the sale opening until no seat was AVAILABLE (0: never);
	// AllBookedAfter until every seat was sold.
	SoldOutAfter   time.Duration `json:"soldOutAfter"`
	AllBookedAfter time.Duration `json:"allBookedAfter"`

	QueueWait      Stats    `json:"queueWait"` // from max(join, sale opening) to admitted
	WaitHistogram  []Bucket `json:"waitHistogram,omitempty"`
	Fairness       Fairness `json:"fairness"`
	Tokens         Tokens   `json:"tokens"`
	StreamFailures int      `json:"streamFailures"`
	Work           Work     `json:"work"` // the proof of work the fans did to join
	// FansStreamed counts fans that heard their place over the event stream, FansPolled those that polled the
	// status at some point because their stream could not be held (a fan can be both).
	FansStreamed int `json:"fansStreamed"`
	FansPolled   int `json:"fansPolled"`

	HoldsPerSecond     []Point           `json:"holdsPerSecond"`     // 201s by second
	ConflictsPerSecond []Point           `json:"conflictsPerSecond"` // 409s by second
	Timeline           []QueueSample     `json:"timeline"`
	Histograms         map[Step][]Bucket `json:"histograms"`
	Storm              *Storm            `json:"storm,omitempty"`
}

// Storm is the hold-storm's headline: decisions (holds granted or refused with 409) per second and their latency,
// for the platform and, when measured, the row-lock baseline, with the ratios.
type Storm struct {
	Target          string         `json:"target"`
	Decisions       int            `json:"decisions"`
	DecisionsPerSec float64        `json:"decisionsPerSecond"`
	P50             time.Duration  `json:"p50"`
	P99             time.Duration  `json:"p99"`
	Errors          int            `json:"errors"` // answers that were neither 201 nor 409
	Histogram       []Bucket       `json:"histogram"`
	Outcomes        map[string]int `json:"outcomes"`
	Baseline        *Storm         `json:"baseline,omitempty"`
	ThroughputRatio float64        `json:"throughputRatio,omitempty"` // platform / baseline
	P99Ratio        float64        `json:"p99Ratio,omitempty"`        // baseline / platform
}

// StormOf computes the storm headline from a run's hold samples inside its storm window.
func StormOf(r *Run) *Storm {
	if r == nil {
		return nil
	}
	s := &Storm{Target: r.Target, Histogram: Histogram(r.Steps[StepHold]), Outcomes: Summarise(r.Steps[StepHold]).Outcomes}
	var lat []time.Duration
	for _, x := range r.Steps[StepHold] {
		if x.Outcome == "201" || x.Outcome == "409" {
			s.Decisions++
			lat = append(lat, x.Latency)
		} else {
			s.Errors++
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	s.P50, s.P99 = Percentile(lat, 50), Percentile(lat, 99)
	if d := r.StormTo - r.StormFrom; d > 0 {
		s.DecisionsPerSec = float64(s.Decisions) / d.Seconds()
	}
	return s
}

// Summarize draws the summary of a run.
func Summarize(r *Run, fairnessSlack time.Duration) *Summary {
	s := &Summary{Scenario: r.Scenario, Target: r.Target, ShowID: r.ShowID, StartedAt: r.StartedAt, Elapsed: r.Elapsed,
		SaleOpens: r.SaleOpens, Steps: map[Step]Stats{}, FanOutcomes: map[string]int{}, Fans: len(r.Fans),
		Histograms: map[Step][]Bucket{}, Timeline: r.Timeline, StreamFailures: r.StreamFailures, Work: r.Work}
	for step, samples := range r.Steps {
		s.Steps[step] = Summarise(samples)
		if step == StepHold || step == StepPay || step == StepSeatMap || step == StepJoin {
			s.Histograms[step] = Histogram(samples)
		}
	}
	var waits []Sample
	for _, f := range r.Fans {
		if f.Outcome == "" {
			f.Outcome = OutcomeError
		}
		s.FanOutcomes[f.Outcome]++
		if f.Streamed {
			s.FansStreamed++
		}
		if f.Polled {
			s.FansPolled++
		}
		if f.Outcome == OutcomeError || f.Outcome == OutcomeRefused || f.Outcome == OutcomePatience {
			if s.Reasons == nil {
				s.Reasons = map[string]int{}
			}
			s.Reasons[f.Outcome+": "+f.Detail]++
		}
		if f.Holds > 0 && r.Scenario.Mode == ModeQueue {
			if s.PayOutcomes == nil {
				s.PayOutcomes = map[PayBehaviour]map[string]int{}
			}
			if s.PayOutcomes[f.Pay] == nil {
				s.PayOutcomes[f.Pay] = map[string]int{}
			}
			s.PayOutcomes[f.Pay][f.Outcome]++
		}
		if f.Admitted {
			s.Admitted++
			from := max(f.Joined, r.SaleOpens)
			waits = append(waits, Sample{At: f.AdmittedAt, Latency: max(0, f.AdmittedAt-from), Outcome: "admitted"})
		}
		if f.Outcome == OutcomeConfirmed {
			s.Confirmed++
			s.SeatsSold += len(f.SeatIDs)
		}
	}
	s.QueueWait = Summarise(waits)
	if len(waits) > 0 {
		s.WaitHistogram = HistogramOf(waits, WaitBounds)
	}
	if r.Scenario.Mode == ModeQueue {
		s.Fairness = CheckFairness(r.Fans, r.SaleOpens, fairnessSlack)
		s.Tokens = CheckTokens(r.Fans)
	}
	for _, q := range r.Timeline {
		if q.At < r.SaleOpens || q.Available < 0 {
			continue
		}
		if s.SoldOutAfter == 0 && q.Available == 0 {
			s.SoldOutAfter = q.At - r.SaleOpens
		}
		if s.AllBookedAfter == 0 && q.Booked > 0 && q.Available == 0 && q.Held == 0 {
			s.AllBookedAfter = q.At - r.SaleOpens
		}
	}
	if s.SoldOutAfter == 0 && r.NoSeatsAt > 0 {
		s.SoldOutAfter = r.NoSeatsAt - r.SaleOpens
	}
	s.HoldsPerSecond, s.ConflictsPerSecond = perSecond(r.Steps[StepHold], "201", r.Elapsed),
		perSecond(r.Steps[StepHold], "409", r.Elapsed)
	if r.Scenario.Mode == ModeHoldStorm {
		s.Storm = StormOf(r)
		if r.Baseline != nil {
			b := StormOf(r.Baseline)
			s.Storm.Baseline = b
			if b.DecisionsPerSec > 0 {
				s.Storm.ThroughputRatio = s.Storm.DecisionsPerSec / b.DecisionsPerSec
			}
			if s.Storm.P99 > 0 {
				s.Storm.P99Ratio = float64(b.P99) / float64(s.Storm.P99)
			}
		}
	}
	return s
}
