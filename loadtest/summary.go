package loadtest

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Stats summarises one step's samples.
type Stats struct {
	Count     int            `json:"count"`
	PerSecond float64        `json:"perSecond"` // count over the span from the first start to the last end
	P50       time.Duration  `json:"p50"`
	P95       time.Duration  `json:"p95"`
	P99       time.Duration  `json:"p99"`
	Max       time.Duration  `json:"max"`
	Outcomes  map[string]int `json:"outcomes"`
}

// Summarise computes Stats over samples.
func Summarise(samples []Sample) Stats {
	s := Stats{Count: len(samples), Outcomes: map[string]int{}}
	if len(samples) == 0 {
		return s
	}
	lat := make([]time.Duration, len(samples))
	first, last := samples[0].At-samples[0].Latency, samples[0].At
	for i, x := range samples {
		lat[i] = x.Latency
		s.Outcomes[x.Outcome]++
		first = min(first, x.At-x.Latency)
		last = max(last, x.At)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	s.P50, s.P95, s.P99, s.Max = Percentile(lat, 50), Percentile(lat, 95), Percentile(lat, 99), lat[len(lat)-1]
	// A span under a second (one sample, a burst) would report absurd rates; a second is the unit anyway.
	s.PerSecond = float64(len(samples)) / max(last-first, time.Second).Seconds()
	return s
}

// Percentile is the nearest-rank percentile of sorted durations.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// Point is one value of a time series, t in seconds from the run's start.
type Point struct {
	T float64 `json:"t"`
	V float64 `json:"v"`
}

// Bucket is one bar of a latency histogram: samples with latency in (previous bucket's Le, Le].
type Bucket struct {
	Le    time.Duration `json:"le"`
	Count int           `json:"count"`
}

// HistogramBounds are the histogram's upper bounds; the last bucket takes everything above.
var HistogramBounds = []time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond,
	50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, time.Duration(math.MaxInt64),
}

// WaitBounds are the queue-wait histogram's upper bounds.
var WaitBounds = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 20 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, time.Duration(math.MaxInt64),
}

// Histogram buckets samples' latencies by HistogramBounds.
func Histogram(samples []Sample) []Bucket { return HistogramOf(samples, HistogramBounds) }

// HistogramOf buckets samples' latencies by bounds (ascending, the last taking everything above).
func HistogramOf(samples []Sample, bounds []time.Duration) []Bucket {
	out := make([]Bucket, len(bounds))
	for i, b := range bounds {
		out[i].Le = b
	}
	for _, s := range samples {
		i := sort.Search(len(bounds), func(i int) bool { return s.Latency <= bounds[i] })
		out[min(i, len(out)-1)].Count++
	}
	return out
}

// Fairness measures admission against queue position.
type Fairness struct {
	// Checked is how many admitted fans had a position observed after the sale opened.
	Checked int `json:"checked"`
	// Overtaken lists fans admitted after more fans than were ahead of them: the queue-order invariant.
	Overtaken []Overtake `json:"overtaken,omitempty"`
	// Spearman is the rank correlation between each fan's place in line (its ticket when known, else an estimate
	// from its position) and its admission order (1: admitted exactly in order).
	Spearman float64 `json:"spearman"`
	// Tickets is how many admitted fans had both their ticket (seq) and their token's iat known: the exact check.
	Tickets int `json:"tickets"`
	// Inversions are fans admitted (by their token's iat) in a later second than a fan behind them in line.
	Inversions []Inversion `json:"inversions,omitempty"`
}

// Inversion is a fan admitted after a fan that stood behind it.
type Inversion struct {
	Fan, Ticket                        int64 // the fan passed over
	IssuedAt                           int64
	Overtaker, OvertakerTicket, OverAt int64
}

// checkTickets is the exact queue-order check: in ticket order, admission seconds (iat) never go backwards. Fans
// of one admission tick share a second, so equal seconds are in order; a fan admitted a second or more after one
// behind it in line was passed over.
func checkTickets(fans []*Fan, fr *Fairness) {
	var xs []*Fan
	for _, f := range fans {
		if f.Admitted && f.Ticket > 0 && f.IssuedAt > 0 {
			xs = append(xs, f)
		}
	}
	fr.Tickets = len(xs)
	sort.Slice(xs, func(i, j int) bool { return xs[i].Ticket < xs[j].Ticket })
	// Walk from the back of the line: the earliest admission seen so far behind each fan.
	var earliest *Fan
	for i := len(xs) - 1; i >= 0; i-- {
		f := xs[i]
		if earliest != nil && earliest.IssuedAt < f.IssuedAt {
			fr.Inversions = append(fr.Inversions, Inversion{Fan: int64(f.ID), Ticket: f.Ticket, IssuedAt: f.IssuedAt,
				Overtaker: int64(earliest.ID), OvertakerTicket: earliest.Ticket, OverAt: earliest.IssuedAt})
		}
		if earliest == nil || f.IssuedAt <= earliest.IssuedAt {
			earliest = f
		}
	}
}

// Overtake is a fan who saw position Position at At, and yet saw Admitted fans let in before itself after that.
type Overtake struct {
	Fan      int           `json:"fan"`
	At       time.Duration `json:"at"`
	Position int           `json:"position"`
	Admitted int           `json:"admitted"`
}

// CheckFairness compares every admitted fan's observed positions with the admissions the crowd saw. A fan told
// "position p" at time t has p-1 fans ahead of it, so at most p-1 others may be admitted after t and before it.
// slack absorbs event delivery skew: admissions within slack after t (they may have happened before the position
// was computed) and within slack before the fan's own admission (the same admission tick) are not counted.
// Positions before the sale opens (plus slack) are provisional, since the queue shuffles at opening, and are
// skipped. The crowd must be the show's only visitors for the count to be complete.
func CheckFairness(fans []*Fan, saleOpens, slack time.Duration) Fairness {
	var adm []time.Duration
	for _, f := range fans {
		if f.Admitted {
			adm = append(adm, f.AdmittedAt)
		}
	}
	sort.Slice(adm, func(i, j int) bool { return adm[i] < adm[j] })
	countIn := func(lo, hi time.Duration) int { // admissions with lo < at < hi
		if hi <= lo {
			return 0
		}
		a := sort.Search(len(adm), func(i int) bool { return adm[i] > lo })
		b := sort.Search(len(adm), func(i int) bool { return adm[i] >= hi })
		return max(0, b-a)
	}
	var fr Fairness
	type pair struct{ est, order float64 }
	var pairs []pair
	for _, f := range fans {
		if !f.Admitted {
			continue
		}
		var worst *Overtake
		first := true
		for _, o := range f.Positions {
			if o.At < saleOpens+slack || o.At > f.AdmittedAt {
				continue
			}
			if first {
				first = false
				fr.Checked++
				// Place in the whole line: the ticket, or the position plus everyone the crowd saw admitted by then.
				est := float64(o.Position + countIn(-1, o.At))
				if f.Ticket > 0 {
					est = float64(f.Ticket)
				}
				order := float64(countIn(-1, f.AdmittedAt) + 1)
				pairs = append(pairs, pair{est, order})
			}
			n := countIn(o.At+slack, f.AdmittedAt-slack)
			if n > o.Position-1 && (worst == nil || n-(o.Position-1) > worst.Admitted-(worst.Position-1)) {
				worst = &Overtake{Fan: f.ID, At: o.At, Position: o.Position, Admitted: n}
			}
		}
		if worst != nil {
			fr.Overtaken = append(fr.Overtaken, *worst)
		}
	}
	checkTickets(fans, &fr)
	if len(pairs) > 1 {
		est := make([]float64, len(pairs))
		ord := make([]float64, len(pairs))
		for i, p := range pairs {
			est[i], ord[i] = p.est, p.order
		}
		fr.Spearman = pearson(ranks(est), ranks(ord))
	}
	return fr
}

// ranks turns values into fractional ranks (ties share the mean rank).
func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return v[idx[a]] < v[idx[b]] })
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
			j++
		}
		mean := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[idx[k]] = mean
		}
		i = j + 1
	}
	return r
}

func pearson(x, y []float64) float64 {
	n := float64(len(x))
	var sx, sy float64
	for i := range x {
		sx += x[i]
		sy += y[i]
	}
	mx, my := sx/n, sy/n
	var cov, vx, vy float64
	for i := range x {
		cov += (x[i] - mx) * (y[i] - my)
		vx += (x[i] - mx) * (x[i] - mx)
		vy += (y[i] - my) * (y[i] - my)
	}
	if vx == 0 || vy == 0 {
		return 1
	}
	return cov / math.Sqrt(vx*vy)
}

// Tokens is what the gate did with admission tokens, as the crowd saw it.
type Tokens struct {
	Admitted int   `json:"admitted"`          // fans given a token
	Used     int   `json:"used"`              // of those, fans that made a booking-route request with it
	Accepted int   `json:"accepted"`          // answered with anything but 401/403
	Refused  []int `json:"refused,omitempty"` // fans whose valid token was refused
	// ExpiredFirst counts fans whose token expired before their first request with it was answered (an overloaded
	// platform); those refusals are the token's expiry, not the gate's failure.
	ExpiredFirst int   `json:"expiredFirst"`
	Probes       int   `json:"probes"`            // requests made without admission
	Allowed      []int `json:"allowed,omitempty"` // fans whose unadmitted probe was let through
	Unclear      int   `json:"unclear"`           // probes with no answer or a 429/5xx
}

// CheckTokens reads the fans' token observations.
func CheckTokens(fans []*Fan) Tokens {
	var t Tokens
	for _, f := range fans {
		if f.Admitted {
			t.Admitted++
			if f.TokenStatus != 0 {
				t.Used++
				switch {
				case f.TokenStatus != 401 && f.TokenStatus != 403:
					t.Accepted++
				case f.TokenLate:
					t.ExpiredFirst++
				default:
					t.Refused = append(t.Refused, f.ID)
				}
			}
		}
		allowed := false
		for _, p := range f.Probes {
			t.Probes++
			switch {
			case p.Status == 401 || p.Status == 403:
			case p.Status == 0 || p.Status == 429 || p.Status >= 500:
				t.Unclear++ // no verdict from the gate either way
			default:
				allowed = true // answered past the gate: 2xx, or booking's own 4xx
			}
		}
		if allowed {
			t.Allowed = append(t.Allowed, f.ID)
		}
	}
	return t
}

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
		Histograms: map[Step][]Bucket{}, Timeline: r.Timeline, StreamFailures: r.StreamFailures}
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

// perSecond is the rate of samples with outcome over the run, in buckets of about a sixtieth of the run (at
// least 100ms), so that a short smoke run and a long premiere both draw a readable curve.
func perSecond(samples []Sample, outcome string, elapsed time.Duration) []Point {
	if len(samples) == 0 {
		return nil
	}
	for _, x := range samples {
		elapsed = max(elapsed, x.At)
	}
	width := max(100*time.Millisecond, (elapsed / 60).Round(100*time.Millisecond))
	n := int(elapsed/width) + 1
	counts := make([]float64, n)
	for _, x := range samples {
		if x.Outcome == outcome {
			counts[int(x.At/width)]++
		}
	}
	out := make([]Point, n)
	for i, c := range counts {
		out[i] = Point{T: (time.Duration(i)*width + width/2).Seconds(), V: c / width.Seconds()}
	}
	return out
}

// FormatDuration prints a latency compactly for tables.
func FormatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Millisecond:
		return strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'f', 0, 64) + "µs"
	case d < time.Second:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + "ms"
	default:
		return strings.TrimSuffix(strconv.FormatFloat(d.Seconds(), 'f', 2, 64), "0") + "s"
	}
}
