// Package report renders a load test's summary three ways: a text table for the terminal, a JSON file for
// machines and BENCHMARKS.md, and one self-contained HTML page with inline SVG charts that opens offline.
package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flashseat/flashseat/loadtest"
)

// Document is what the JSON file holds: the summary plus the checker's verdict.
type Document struct {
	Summary    *loadtest.Summary    `json:"summary"`
	Violations []loadtest.Violation `json:"violations"`
	Checked    []string             `json:"checked"` // invariants the checker evaluated
	Command    string               `json:"command,omitempty"`
	Machine    Machine              `json:"machine"`
	// Fans, when set, are written one JSON object a line to fans.jsonl: every fan's own record, to look into a
	// violation or an odd outcome.
	Fans []*loadtest.Fan `json:"-"`
}

// Text writes the report as tables.
func Text(w io.Writer, d Document) error {
	s := d.Summary
	sc := s.Scenario
	fmt.Fprintf(w, "flashseat load test: scenario %s (%s) against %s, show %s\n", sc.Name, sc.Mode, s.Target, s.ShowID)
	fmt.Fprintf(w, "fans %d, seats %d, elapsed %s, sale opened at +%s; machine %d CPUs, %d MB\n\n", sc.Fans, sc.Seats,
		s.Elapsed.Round(time.Millisecond), s.SaleOpens.Round(time.Millisecond), d.Machine.CPUs, d.Machine.MemoryMB)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\tcount\tper s\tp50\tp95\tp99\tmax\toutcomes\t")
	for _, step := range loadtest.StepOrder {
		st, ok := s.Steps[step]
		if !ok {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%s\t%s\t%s\t%s\t%s\t\n", step, st.Count, st.PerSecond,
			loadtest.FormatDuration(st.P50), loadtest.FormatDuration(st.P95), loadtest.FormatDuration(st.P99),
			loadtest.FormatDuration(st.Max), outcomes(st.Outcomes))
	}
	if s.QueueWait.Count > 0 {
		q := s.QueueWait
		fmt.Fprintf(tw, "queue wait\t%d\t\t%s\t%s\t%s\t%s\t\t\n", q.Count, loadtest.FormatDuration(q.P50),
			loadtest.FormatDuration(q.P95), loadtest.FormatDuration(q.P99), loadtest.FormatDuration(q.Max))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintf(w, "\nfans: %s\n", outcomes(s.FanOutcomes))
	for _, b := range []loadtest.PayBehaviour{loadtest.PayOK, loadtest.PayDeclinedThenOK, loadtest.PaySlow,
		loadtest.PayError, loadtest.PayAbandon} {
		if m, ok := s.PayOutcomes[b]; ok {
			fmt.Fprintf(w, "  paying %-16s %s\n", b+":", outcomes(m))
		}
	}
	for _, r := range sortedKeys(s.Reasons) {
		fmt.Fprintf(w, "  %d× %s\n", s.Reasons[r], r)
	}
	if sc.Mode == loadtest.ModeQueue {
		fmt.Fprintf(w, "admitted %d, confirmed %d bookings (%d seats)\n", s.Admitted, s.Confirmed, s.SeatsSold)
		fmt.Fprintf(w, "sold out (no seat AVAILABLE) after %s from opening; all seats booked after %s\n",
			orNever(s.SoldOutAfter), orNever(s.AllBookedAfter))
		fmt.Fprintf(w, "fairness: %s\n", fairness(s.Fairness))
		t := s.Tokens
		fmt.Fprintf(w, "tokens: %d admitted, %d used, %d accepted, %d refused, %d expired before first use; probes without admission: %d, %d let through, %d unclear\n",
			t.Admitted, t.Used, t.Accepted, len(t.Refused), t.ExpiredFirst, t.Probes, len(t.Allowed), t.Unclear)
		fmt.Fprintf(w, "queue followed over SSE by %d fans; %d polled the status instead\n", s.FansStreamed, s.FansPolled)
		if s.StreamFailures > 0 {
			fmt.Fprintf(w, "event streams that failed and fell back to polling: %d\n", s.StreamFailures)
		}
		fmt.Fprintf(w, "bot protection: %s\n", botWork(sc, s.Work))
	}
	if st := s.Storm; st != nil {
		fmt.Fprintf(w, "\nhold-storm at %s: %d decisions, %.0f/s, p50 %s, p99 %s, %d other answers\n", st.Target, st.Decisions,
			st.DecisionsPerSec, loadtest.FormatDuration(st.P50), loadtest.FormatDuration(st.P99), st.Errors)
		if b := st.Baseline; b != nil {
			fmt.Fprintf(w, "row-lock baseline at %s: %d decisions, %.0f/s, p50 %s, p99 %s, %d other answers (%s)\n", b.Target,
				b.Decisions, b.DecisionsPerSec, loadtest.FormatDuration(b.P50), loadtest.FormatDuration(b.P99), b.Errors,
				outcomes(b.Outcomes))
			fmt.Fprintf(w, "ratio: %.1fx the decisions per second; %s\n", st.ThroughputRatio, p99Words(st.P99Ratio))
		}
	}

	fmt.Fprintf(w, "\nviolations: %d\n", len(d.Violations))
	for _, v := range d.Violations {
		fmt.Fprintf(w, "  - [%s] %s\n", v.Invariant, v.Detail)
	}
	if len(d.Checked) > 0 {
		fmt.Fprintf(w, "invariants checked: %s\n", strings.Join(d.Checked, ", "))
	}
	return nil
}

// botWork says what the show's bot protection cost the crowd: the base difficulty the scenario set (the platform's
// default is 100,000) and the proof of work its fans did, all on the generator's own cores.
func botWork(sc loadtest.Scenario, w loadtest.Work) string {
	out := fmt.Sprintf("on, base difficulty %d (the platform's default: 100000); %d challenges solved", sc.BotDifficulty,
		w.Solved)
	if w.Solved > 0 {
		out += fmt.Sprintf(", %.1f M hashes, %s of solving (%.0f ms a fan)", float64(w.Hashes)/1e6,
			w.Time.Round(time.Millisecond), float64(w.Time.Milliseconds())/float64(w.Solved))
	}
	return out
}

// fairness describes the queue-order checks: the exact one when tickets were known, and the timing one.
func fairness(f loadtest.Fairness) string {
	timing := fmt.Sprintf("%d fans checked by position and timing, %d suspected overtaken", f.Checked, len(f.Overtaken))
	if f.Tickets > 0 {
		timing = fmt.Sprintf("%d fans checked by ticket and token time, %d admitted after someone behind them; %s (informative only)",
			f.Tickets, len(f.Inversions), timing)
	}
	return fmt.Sprintf("Spearman %.3f between place in line and admission order; %s", f.Spearman, timing)
}

// p99Words says how the platform's p99 compares with the baseline's, given baseline/platform.
func p99Words(r float64) string {
	switch {
	case r <= 0:
		return "p99 not comparable"
	case r >= 1:
		return fmt.Sprintf("p99 %.1f× lower", r)
	default:
		return fmt.Sprintf("p99 %.1f× higher", 1/r)
	}
}

func orNever(d time.Duration) string {
	if d <= 0 {
		return "never"
	}
	return d.Round(10 * time.Millisecond).String()
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func outcomes(m map[string]int) string {
	keys := sortedKeys(m)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

// Write puts report.json and report.html for d in a new directory under dir named after the run, and returns it.
func Write(dir string, d Document) (string, error) {
	s := d.Summary
	name := fmt.Sprintf("%s-%s", s.StartedAt.UTC().Format("20060102-150405"), s.Scenario.Name)
	out := filepath.Join(dir, name)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(out, "report.json"), b, 0o644); err != nil {
		return "", err
	}
	var txt strings.Builder
	if err := Text(&txt, d); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(out, "report.txt"), []byte(txt.String()), 0o644); err != nil {
		return "", err
	}
	if len(d.Fans) > 0 {
		if err := writeFans(filepath.Join(out, "fans.jsonl"), d.Fans); err != nil {
			return "", err
		}
	}
	var md strings.Builder
	if err := Markdown(&md, d); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(out, "report.md"), []byte(md.String()), 0o644); err != nil {
		return "", err
	}
	f, err := os.Create(filepath.Join(out, "report.html"))
	if err != nil {
		return "", err
	}
	if err := HTML(f, d); err != nil {
		f.Close()
		return "", err
	}
	return out, f.Close()
}

func writeFans(path string, fans []*loadtest.Fan) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, fan := range fans {
		if err := enc.Encode(fan); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
