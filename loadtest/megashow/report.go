package megashow

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/flashseat/flashseat/waitroom"
)

// Report is a run's figures. Times are seconds unless a name says otherwise.
type Report struct {
	Show       string `json:"show"`
	Fans       int    `json:"fans"`
	Streams    int    `json:"streams"` // fans who joined through the edges and held a stream
	APIJoins   int    `json:"apiJoins"`
	Partitions int    `json:"partitions"`
	Masters    int    `json:"masters"` // Redis masters the figures sum over
	Difficulty int64  `json:"difficulty"`
	Edges      int    `json:"edges"`
	Parts      int    `json:"parts"`

	HTTPJoinsPerSecond float64        `json:"httpJoinsPerSecond"` // streaming fans' joins through the edges, proof of work included
	HTTPJoinP50Ms      int64          `json:"httpJoinP50Ms"`
	HTTPJoinP99Ms      int64          `json:"httpJoinP99Ms"`
	APIJoinsPerSecond  float64        `json:"apiJoinsPerSecond"`
	APIJoinFailures    int            `json:"apiJoinFailures"`
	JoinStatus         map[string]int `json:"joinStatus"`
	SolveHashes        int64          `json:"solveHashes"`
	SolveSeconds       float64        `json:"solveSeconds"`
	Solved             int64          `json:"solved"`
	StreamsReadyAfter  float64        `json:"streamsReadyAfter"`
	WaitingAfterJoins  int            `json:"waitingAfterJoins"`

	EdgeRSSDeltaMB     float64 `json:"edgeRssDeltaMb"`
	EdgeBytesPerStream float64 `json:"edgeBytesPerStream"`
	RedisUsedDeltaMB   float64 `json:"redisUsedDeltaMb"`
	RedisBytesPerFan   float64 `json:"redisBytesPerFan"`
	Quiet              float64 `json:"quiet"`
	RedisCPUQuiet      float64 `json:"redisCpuQuiet"` // Redis CPU seconds over the quiet window, every master's
	// RedisCPUQuietBusiestShare is the busiest master's share of RedisCPUQuiet: how the heartbeats divide.
	RedisCPUQuietBusiestShare float64 `json:"redisCpuQuietBusiestShare"`
	// HeartbeatCPUMicrosPerFanMinute is RedisCPUQuiet per streaming fan and minute, in microseconds.
	HeartbeatCPUMicrosPerFanMinute float64 `json:"heartbeatCpuMicrosPerFanMinute"`

	AdmitPerSecond float64 `json:"admitPerSecond"`
	AdmitFor       float64 `json:"admitFor"`
	AdmittedTotal  int     `json:"admittedTotal"` // the waiting room's count
	SkippedTotal   int     `json:"skippedTotal"`
	AdmittedEvents int     `json:"admittedEvents"` // admitted events the streams received
	// AdmitIatP50Ms/P99Ms: an admitted event's arrival minus its token's iat. The tick floors iat to its second
	// (admit.lua), so these overstate the tick-to-event time by up to a second; SpreadP99Ms is the precise part:
	// arrival minus the first arrival of the same tick (the jti's nonce), the fan-out's own spread.
	AdmitIatP50Ms        int64   `json:"admitIatP50Ms"`
	AdmitIatP99Ms        int64   `json:"admitIatP99Ms"`
	SpreadP99Ms          int64   `json:"spreadP99Ms"`
	FirstAdmittedAfterMs int64   `json:"firstAdmittedAfterMs"` // from the resume's answer to the first admitted event
	Reconnects           int     `json:"reconnects"`
	Took                 float64 `json:"took"`

	Violations []string `json:"violations"`

	fans      []FanRecord
	resumedMs int64
}

// slackMs is how far apart two joins may be and still be ordered either way across lines: a line's arrival marks
// are waitroom.MarkEvery apart, and the generator's clock reads a join's times on either side of it.
const slackMs = waitroom.MarkEvery + 50

// summarize draws the figures from the fans' records and judges them (Violations).
func (r *Report) summarize() {
	sent := make([]int64, 0, len(r.fans))
	done := make([]int64, 0, len(r.fans))
	var lat []int64
	for _, f := range r.fans {
		if f.DoneMs > 0 && f.JoinPos > 0 {
			sent, done = append(sent, f.SentMs), append(done, f.DoneMs)
			lat = append(lat, f.DoneMs-f.SentMs)
		}
		r.Reconnects += f.Reconnects
	}
	slices.Sort(sent)
	slices.Sort(done)
	if len(sent) > 0 {
		if span := float64(done[len(done)-1]-sent[0]) / 1000; span > 0 {
			r.HTTPJoinsPerSecond = float64(len(sent)) / span
		}
	}
	r.HTTPJoinP50Ms, r.HTTPJoinP99Ms = quantile(lat, 0.5), quantile(lat, 0.99)

	var v []string
	bad := func(format string, a ...any) { v = append(v, fmt.Sprintf(format, a...)) }

	// Everyone joined exactly once: every streaming fan has its place, the Go API's joins all took, and the
	// queue counts exactly the crowd (a fan joined twice would hold one place; one lost, none).
	if len(sent) != r.Streams {
		bad("joined-once: %d of %d streaming fans joined through the edge", len(sent), r.Streams)
	}
	if r.APIJoinFailures > 0 {
		bad("joined-once: %d Go-API joins failed", r.APIJoinFailures)
	}
	if r.WaitingAfterJoins != r.Fans {
		bad("joined-once: the queue counted %d waiting after every join, want %d", r.WaitingAfterJoins, r.Fans)
	}

	// Positions honest: in a paused queue a fan's position is 1 + the fans ahead in the show's one order, so the
	// positions told are distinct, and the fans ahead are at least those whose join was answered before this
	// fan's was sent, and at most those whose join was sent before this fan's was answered (slackMs either side).
	seen := map[int]int{}
	tickets := map[int64]bool{}
	unpositioned, dishonest, dup := 0, 0, 0
	var worst string
	for _, f := range r.fans {
		if f.Pos <= 0 {
			unpositioned++
			continue
		}
		if tickets[f.Ticket] {
			bad("joined-once: ticket %d told to two fans", f.Ticket)
		}
		tickets[f.Ticket] = true
		if seen[f.Pos]++; seen[f.Pos] > 1 {
			dup++
		}
		lo := sort.Search(len(done), func(i int) bool { return done[i] >= f.SentMs-slackMs })
		hi := sort.Search(len(sent), func(i int) bool { return sent[i] > f.DoneMs+slackMs }) - 1
		if ahead := f.Pos - 1; ahead < lo || ahead > hi {
			dishonest++
			if worst == "" {
				worst = fmt.Sprintf("fan %d told %d, between %d and %d fans joined ahead", f.ID, f.Pos, lo, hi)
			}
		}
	}
	if unpositioned > 0 {
		bad("positions-honest: %d streaming fans were never told a position", unpositioned)
	}
	if dup > 0 {
		bad("positions-honest: %d positions told to more than one fan", dup)
	}
	if dishonest > 0 {
		bad("positions-honest: %d positions outside what the joins allow (first: %s)", dishonest, worst)
	}

	// Nobody admitted twice, and admission in the order told: every grant reached its fan once, no two fans
	// share a token id, and the admitted are the fans told the first positions (within max(3, 1%)).
	jtis := map[string]bool{}
	var iat, spread []int64
	first := map[string]int64{}
	for _, f := range r.fans {
		if f.Admitted == 0 {
			continue
		}
		r.AdmittedEvents++
		if f.Admitted > 1 {
			bad("admitted-once: fan %d got %d admitted events", f.ID, f.Admitted)
		}
		if f.JTI == "" || jtis[f.JTI] {
			bad("admitted-once: fan %d's token id %q is empty or another fan's", f.ID, f.JTI)
		}
		jtis[f.JTI] = true
		iat = append(iat, f.AdmittedMs-f.Iat*1000)
		n := nonce(f.JTI)
		if t, ok := first[n]; !ok || f.AdmittedMs < t {
			first[n] = f.AdmittedMs
		}
		if tol := max(3, r.AdmittedTotal/100); f.Pos > r.AdmittedTotal+tol {
			bad("admitted-in-order: fan %d told position %d was admitted among the first %d", f.ID, f.Pos, r.AdmittedTotal)
		}
	}
	passed := 0
	for _, f := range r.fans {
		if f.Admitted > 0 {
			spread = append(spread, f.AdmittedMs-first[nonce(f.JTI)])
			if r.FirstAdmittedAfterMs == 0 || f.AdmittedMs-r.resumedMs < r.FirstAdmittedAfterMs {
				r.FirstAdmittedAfterMs = f.AdmittedMs - r.resumedMs
			}
		} else if tol := max(3, r.AdmittedTotal/100); f.Pos > 0 && f.Pos < r.AdmittedTotal-tol {
			passed++
		}
	}
	if passed > 0 {
		bad("admitted-in-order: %d streaming fans ahead of the %d admitted were passed over", passed, r.AdmittedTotal)
	}
	if r.AdmittedTotal <= r.Streams && r.AdmittedEvents != r.AdmittedTotal {
		bad("admitted-once: the waiting room admitted %d, the streams were told %d", r.AdmittedTotal, r.AdmittedEvents)
	}
	r.AdmitIatP50Ms, r.AdmitIatP99Ms, r.SpreadP99Ms = quantile(iat, 0.5), quantile(iat, 0.99), quantile(spread, 0.99)

	// The figures: present and within what a fan could plausibly cost.
	for _, c := range []struct {
		name   string
		got    float64
		lo, hi float64
	}{
		{"httpJoinsPerSecond", r.HTTPJoinsPerSecond, 0, math.Inf(1)},
		{"apiJoinsPerSecond", r.APIJoinsPerSecond, -1, math.Inf(1)}, // zero when every fan streams
		{"edgeBytesPerStream", r.EdgeBytesPerStream, 0, 1 << 20},
		{"redisBytesPerFan", r.RedisBytesPerFan, 0, 64 << 10},
		{"heartbeatCpuMicrosPerFanMinute", r.HeartbeatCPUMicrosPerFanMinute, 0, 1e6},
		{"admittedEvents", float64(r.AdmittedEvents), 0, math.Inf(1)},
		{"admitIatP99Ms", float64(r.AdmitIatP99Ms), 0, 60_000},
	} {
		if math.IsNaN(c.got) || c.got <= c.lo || c.got >= c.hi {
			bad("figures: %s = %g, want in (%g, %g)", c.name, c.got, c.lo, c.hi)
		}
	}
	r.Violations = v
}

// nonce is the tick's part of a grant's jti (nonce.count, admit.lua).
func nonce(jti string) string {
	if i := strings.LastIndexByte(jti, '.'); i > 0 {
		return jti[:i]
	}
	return jti
}

// quantile is the q-quantile of xs (nearest rank), 0 for none; xs is sorted in place.
func quantile(xs []int64, q float64) int64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// Text writes the report as the command prints it.
func (r *Report) Text(w io.Writer) error {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	p("megashow: show %s, %d fans, %d streaming through %d edges (%d generator parts), %d partitions over %d Redis master(s), bot difficulty %d",
		r.Show, r.Fans, r.Streams, r.Edges, r.Parts, r.Partitions, r.Masters, r.Difficulty)
	p("joins through the edges (streaming fans, proof of work solved): %.0f/s, p50 %d ms, p99 %d ms; %s; %d proofs, %.1fM hashes, %.0f s of solving",
		r.HTTPJoinsPerSecond, r.HTTPJoinP50Ms, r.HTTPJoinP99Ms, statusLine(r.JoinStatus), r.Solved, float64(r.SolveHashes)/1e6, r.SolveSeconds)
	p("joins through the waiting room's Go API (the other %d fans): %.0f/s, %d failed; every stream open after %.0f s; queue counted %d waiting",
		r.APIJoins, r.APIJoinsPerSecond, r.APIJoinFailures, r.StreamsReadyAfter, r.WaitingAfterJoins)
	p("edge memory: +%.0f MB RSS, %.1f KB per stream; Redis: +%.0f MB used_memory, %.0f bytes per fan",
		r.EdgeRSSDeltaMB, r.EdgeBytesPerStream/1024, r.RedisUsedDeltaMB, r.RedisBytesPerFan)
	p("heartbeats: %.2f s of Redis CPU over a %.0f s quiet window, %.1f µs per streaming fan per minute; the busiest master's share %.3f",
		r.RedisCPUQuiet, r.Quiet, r.HeartbeatCPUMicrosPerFanMinute, r.RedisCPUQuietBusiestShare)
	p("admission at %.0f/s for %.0f s: %d admitted (%d skipped), %d events; arrival - iat p50 %d ms, p99 %d ms (iat floored to the second); same-tick spread p99 %d ms; first event %d ms after the resume; %d stream reconnects",
		r.AdmitPerSecond, r.AdmitFor, r.AdmittedTotal, r.SkippedTotal, r.AdmittedEvents, r.AdmitIatP50Ms, r.AdmitIatP99Ms,
		r.SpreadP99Ms, r.FirstAdmittedAfterMs, r.Reconnects)
	p("took %.0f s; violations: %d", r.Took, len(r.Violations))
	for _, s := range r.Violations {
		p("  %s", s)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func statusLine(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s×%d", k, m[k])
	}
	return "answers " + strings.Join(parts, " ")
}
