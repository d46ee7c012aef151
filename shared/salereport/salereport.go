// Package salereport is the after-sale report of one show as booking answers it (GET
// /admin/v1/shows/{id}/report, and .csv) and the operator console draws it: what came, how long it waited, what was
// admitted, held, bought and refunded, minute by minute, with the refusals, the payments and the revenue. It is
// built from the durable record (PostgreSQL) only, so a restart or a Redis loss changes none of it.
package salereport

import (
	"encoding/csv"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"
)

// Point is one minute of a series: the minute's start (UTC) and what happened in it (or, for the queue's length,
// how it stood at its end).
type Point struct {
	T     time.Time `json:"t"`
	Count int64     `json:"count"`
}

// Waits are the times fans waited in line, from their place (or the sale's opening, for a fan who joined before
// it) to their first admission, in seconds, nearest-rank percentiles. An admission is on record to the second
// (its token's iat), so a wait is good to a second.
type Waits struct {
	P50       float64  `json:"p50"`
	P90       float64  `json:"p90"`
	P99       float64  `json:"p99"`
	Max       float64  `json:"max"`
	Count     int64    `json:"count"`
	Histogram []Bucket `json:"histogram"`
}

// Bucket is one bar of the wait histogram: fans who waited from From (included) to To seconds (excluded; the last
// bar includes its To).
type Bucket struct {
	From  float64 `json:"from"`
	To    float64 `json:"to"`
	Count int64   `json:"count"`
}

// Abandoned counts the fans who gave up: joined and never bought, and admitted but let every admission lapse
// without buying (an admission kicked by an operator is not a lapse).
type Abandoned struct {
	JoinedNeverBought int64 `json:"joinedNeverBought"`
	AdmittedLapsed    int64 `json:"admittedLapsed"`
}

// Funnel is the sale's fans at each step: joined the queue, admitted, held seats, bought.
type Funnel struct {
	Joined   int64 `json:"joined"`
	Admitted int64 `json:"admitted"`
	Held     int64 `json:"held"`
	Bought   int64 `json:"bought"`
}

// Bots are the suspected bots: joins refused for a suspect's reason and suspects given a shadow place.
type Bots struct {
	Refused  int64 `json:"refused"`
	Shadowed int64 `json:"shadowed"`
}

// Payments are the pay attempts by outcome (CONFIRMED, DECLINED, ...; an attempt still running by its state) and
// the payment breaker's openings during the sale, on any booking replica.
type Payments struct {
	Attempts        int64            `json:"attempts"`
	Outcomes        map[string]int64 `json:"outcomes"`
	BreakerOpenings int64            `json:"breakerOpenings"`
	BreakerOpenedAt []time.Time      `json:"breakerOpenedAt"`
}

// Revenue is in the show's currency's minor units: byCategory the list price of the seats sold and not refunded,
// gross what fans paid, refunded what refunds returned (owed, for one not settled yet), net the difference.
type Revenue struct {
	Currency   string           `json:"currency"`
	ByCategory map[string]int64 `json:"byCategory"`
	Seats      map[string]int64 `json:"seats"`
	Gross      int64            `json:"gross"`
	Refunded   int64            `json:"refunded"`
	Net        int64            `json:"net"`
}

// Report is one show's sale.
type Report struct {
	ShowID      string    `json:"showId"`
	Title       string    `json:"title"`
	GeneratedAt time.Time `json:"generatedAt"`
	// From and To are the first and last minutes the series cover (every minute between, none left out).
	From time.Time `json:"from"`
	To   time.Time `json:"to"`

	Arrivals []Point `json:"arrivals"`
	// QueueLength is, at each minute's end, the fans who had joined and were not admitted yet. The record does not
	// know when a fan who never came up gave up, so such a fan counts until the end.
	QueueLength []Point `json:"queueLength"`
	Admitted    []Point `json:"admitted"`
	Holds       []Point `json:"holds"`
	Confirmed   []Point `json:"confirmed"`
	Refunds     []Point `json:"refunds"`

	WaitSeconds Waits     `json:"waitSeconds"`
	Abandoned   Abandoned `json:"abandoned"`
	Funnel      Funnel    `json:"funnel"`
	// Refusals are the joins refused a new place, by reason (the waiting room's refusal table's names).
	Refusals  map[string]int64 `json:"refusals"`
	Bots      Bots             `json:"bots"`
	Cancelled int64            `json:"cancelled"` // holds cancelled by their fan
	Expired   int64            `json:"expired"`   // holds that lapsed unpaid
	Payments  Payments         `json:"payments"`
	Revenue   Revenue          `json:"revenue"`
	Retention Retention        `json:"retention"`
}

// Retention says how long the report and the per-fan rows it was built from are kept.
type Retention struct {
	// Note says it in the operator's words.
	Note string `json:"note"`
	// SummarisedAt: the report was summarised then (the show had started) and is served from the summary.
	SummarisedAt *time.Time `json:"summarisedAt,omitempty"`
	// FanRowsDeletedAt: the per-fan rows it was built from were deleted then.
	FanRowsDeletedAt *time.Time `json:"fanRowsDeletedAt,omitempty"`
	// FanRetentionDays is how long after the summary the per-fan rows are kept; ReportKeptDays how long the
	// report is kept at least.
	FanRetentionDays int `json:"fanRetentionDays"`
	ReportKeptDays   int `json:"reportKeptDays"`
}

// Minutes is a dense per-minute series from from to to (both minutes' starts, included), each minute's count taken
// from counts (keyed by minute start, UTC); minutes without a count are zero.
func Minutes(from, to time.Time, counts map[time.Time]int64) []Point {
	if to.Before(from) {
		return []Point{}
	}
	out := make([]Point, 0, int(to.Sub(from)/time.Minute)+1)
	for t := from; !t.After(to); t = t.Add(time.Minute) {
		out = append(out, Point{T: t, Count: counts[t]})
	}
	return out
}

// Cumulative turns joined and left (per minute) into how many stood between at each minute's end.
func Cumulative(from, to time.Time, joined, left map[time.Time]int64) []Point {
	var before int64 // joined minus left before from
	for t, n := range joined {
		if t.Before(from) {
			before += n
		}
	}
	for t, n := range left {
		if t.Before(from) {
			before -= n
		}
	}
	out := Minutes(from, to, nil)
	for i := range out {
		before += joined[out[i].T] - left[out[i].T]
		out[i].Count = before
	}
	return out
}

// histogramBars is how many bars the wait histogram has at most.
const histogramBars = 12

// WaitsOf summarises waits (seconds, in any order): nearest-rank percentiles, the maximum and a histogram of
// equal bars whose width is a round number of seconds.
func WaitsOf(waits []float64) Waits {
	w := Waits{Histogram: []Bucket{}}
	if len(waits) == 0 {
		return w
	}
	s := slices.Clone(waits)
	sort.Float64s(s)
	rank := func(p float64) float64 { return s[max(0, int(math.Ceil(p*float64(len(s))))-1)] }
	w.P50, w.P90, w.P99, w.Max, w.Count = rank(0.5), rank(0.9), rank(0.99), s[len(s)-1], int64(len(s))
	width := roundUp(w.Max / histogramBars)
	bars := max(1, int(math.Ceil(w.Max/width)))
	w.Histogram = make([]Bucket, bars)
	for i := range w.Histogram {
		w.Histogram[i] = Bucket{From: float64(i) * width, To: float64(i+1) * width}
	}
	for _, v := range s {
		i := min(bars-1, int(v/width))
		w.Histogram[i].Count++
	}
	return w
}

// roundUp is the smallest of 1, 2 or 5 times a power of ten seconds (at least a second) not below x.
func roundUp(x float64) float64 {
	step := 1.0
	for {
		for _, m := range []float64{1, 2, 5} {
			if step*m >= x {
				return step * m
			}
		}
		step *= 10
	}
}

// WriteCSV writes r as rows of three columns, figure, key and value, under a header row: one row per minute of
// each series (key the minute, RFC 3339), per percentile, per reason, outcome and category. Any CSV reader takes
// it as one table.
func WriteCSV(w io.Writer, r Report) error {
	cw := csv.NewWriter(w)
	row := func(fig, key string, v string) { _ = cw.Write([]string{fig, key, v}) } // errors surface at Flush
	num := func(fig, key string, n int64) { row(fig, key, strconv.FormatInt(n, 10)) }
	sec := func(key string, v float64) { row("waitSeconds", key, strconv.FormatFloat(v, 'f', 3, 64)) }
	row("figure", "key", "value")
	row("show", "id", r.ShowID)
	row("show", "title", r.Title)
	row("report", "generatedAt", r.GeneratedAt.UTC().Format(time.RFC3339))
	for _, s := range []struct {
		name string
		pts  []Point
	}{{"arrivals", r.Arrivals}, {"queueLength", r.QueueLength}, {"admitted", r.Admitted}, {"holds", r.Holds},
		{"confirmed", r.Confirmed}, {"refunds", r.Refunds}} {
		for _, p := range s.pts {
			num(s.name, p.T.UTC().Format(time.RFC3339), p.Count)
		}
	}
	sec("p50", r.WaitSeconds.P50)
	sec("p90", r.WaitSeconds.P90)
	sec("p99", r.WaitSeconds.P99)
	sec("max", r.WaitSeconds.Max)
	num("waitSeconds", "count", r.WaitSeconds.Count)
	for _, b := range r.WaitSeconds.Histogram {
		num("waitHistogram", strconv.FormatFloat(b.From, 'f', -1, 64)+"-"+strconv.FormatFloat(b.To, 'f', -1, 64), b.Count)
	}
	num("abandoned", "joinedNeverBought", r.Abandoned.JoinedNeverBought)
	num("abandoned", "admittedLapsed", r.Abandoned.AdmittedLapsed)
	num("funnel", "joined", r.Funnel.Joined)
	num("funnel", "admitted", r.Funnel.Admitted)
	num("funnel", "held", r.Funnel.Held)
	num("funnel", "bought", r.Funnel.Bought)
	for _, k := range Keys(r.Refusals) {
		num("refusals", k, r.Refusals[k])
	}
	num("bots", "refused", r.Bots.Refused)
	num("bots", "shadowed", r.Bots.Shadowed)
	num("holds", "cancelled", r.Cancelled)
	num("holds", "expired", r.Expired)
	num("payments", "attempts", r.Payments.Attempts)
	for _, k := range Keys(r.Payments.Outcomes) {
		num("payments", k, r.Payments.Outcomes[k])
	}
	num("payments", "breakerOpenings", r.Payments.BreakerOpenings)
	row("revenue", "currency", r.Revenue.Currency)
	for _, k := range Keys(r.Revenue.ByCategory) {
		num("revenue", k, r.Revenue.ByCategory[k])
	}
	num("revenue", "gross", r.Revenue.Gross)
	num("revenue", "refunded", r.Revenue.Refunded)
	num("revenue", "net", r.Revenue.Net)
	row("retention", "note", r.Retention.Note)
	cw.Flush()
	return cw.Error()
}

// Keys are a figure map's keys in order: the order the CSV and the console list them in.
func Keys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
