package report

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/flashseat/flashseat/loadtest"
)

// Machine describes where a run was measured; a number without its machine means nothing.
type Machine struct {
	CPUs     int    `json:"cpus"`
	MemoryMB int    `json:"memoryMB"`
	OS       string `json:"os"`
	Go       string `json:"go"`
}

// ThisMachine reads the local machine's description.
func ThisMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH, Go: runtime.Version()}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var kb int
			if _, err := fmt.Sscanf(sc.Text(), "MemTotal: %d kB", &kb); err == nil {
				m.MemoryMB = kb / 1024
				break
			}
		}
	}
	return m
}

// Markdown writes the run's headline as a fragment for BENCHMARKS.md: the command, the machine, the step table
// and, for a hold-storm, the baseline beside the platform.
func Markdown(w io.Writer, d Document) error {
	s := d.Summary
	fmt.Fprintf(w, "### %s (%s)\n\n", s.Scenario.Name, s.StartedAt.UTC().Format("2006-01-02 15:04 UTC"))
	if d.Command != "" {
		fmt.Fprintf(w, "Command: `%s`  \n", d.Command)
	}
	m := d.Machine
	fmt.Fprintf(w, "Machine: %d CPUs, %d MB, %s, %s; load generator on the same machine.  \n", m.CPUs, m.MemoryMB, m.OS, m.Go)
	bots := ""
	if s.Scenario.Mode == loadtest.ModeQueue {
		bots = fmt.Sprintf(", bot protection at base difficulty %d", s.Scenario.BotDifficulty)
	}
	fmt.Fprintf(w, "Fans %d, seats %d%s; violations: %d.\n\n", s.Scenario.Fans, s.Scenario.Seats, bots, len(d.Violations))
	fmt.Fprintln(w, "| step | count | per s | p50 | p95 | p99 | max |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, step := range loadtest.StepOrder {
		if st, ok := s.Steps[step]; ok {
			fmt.Fprintf(w, "| %s | %d | %.1f | %s | %s | %s | %s |\n", step, st.Count, st.PerSecond,
				loadtest.FormatDuration(st.P50), loadtest.FormatDuration(st.P95), loadtest.FormatDuration(st.P99),
				loadtest.FormatDuration(st.Max))
		}
	}
	if q := s.QueueWait; q.Count > 0 {
		fmt.Fprintf(w, "| queue wait | %d | | %s | %s | %s | %s |\n", q.Count, loadtest.FormatDuration(q.P50),
			loadtest.FormatDuration(q.P95), loadtest.FormatDuration(q.P99), loadtest.FormatDuration(q.Max))
	}
	if s.Scenario.Mode == loadtest.ModeQueue {
		fmt.Fprintf(w, "\nSold out (no seat available) %s after opening; %d bookings confirmed; fairness: %s.\n",
			orNever(s.SoldOutAfter), s.Confirmed, fairness(s.Fairness))
	}
	if st := s.Storm; st != nil {
		fmt.Fprintln(w, "\n| design | decisions/s | p50 | p99 |")
		fmt.Fprintln(w, "| --- | ---: | ---: | ---: |")
		fmt.Fprintf(w, "| flashseat (Redis Lua + Postgres ledger) at %s | %.0f | %s | %s |\n", st.Target, st.DecisionsPerSec,
			loadtest.FormatDuration(st.P50), loadtest.FormatDuration(st.P99))
		if b := st.Baseline; b != nil {
			fmt.Fprintf(w, "| row-lock baseline (SELECT … FOR UPDATE), in-process, no edge hop | %.0f | %s | %s |\n", b.DecisionsPerSec,
				loadtest.FormatDuration(b.P50), loadtest.FormatDuration(b.P99))
			fmt.Fprintf(w, "\nRatio: %.1f× the decisions per second; %s.\n", st.ThroughputRatio, p99Words(st.P99Ratio))
		}
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// CommandLine renders the command that reproduces a run, for humans to paste.
func CommandLine(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " \t\"'$") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}
