package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/loadtest"
)

func sampleRun() *loadtest.Run {
	r := &loadtest.Run{Scenario: loadtest.Presets["smoke"], Target: "http://127.0.0.1:1", ShowID: "s1",
		StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), SaleOpens: time.Second, Elapsed: 10 * time.Second,
		Steps: map[loadtest.Step][]loadtest.Sample{}}
	for i := 0; i < 200; i++ {
		out := "201"
		if i%3 == 0 {
			out = "409"
		}
		at := time.Duration(i) * 40 * time.Millisecond
		r.Steps[loadtest.StepHold] = append(r.Steps[loadtest.StepHold], loadtest.Sample{At: at, Latency: time.Duration(i) * time.Millisecond, Outcome: out})
		r.Timeline = append(r.Timeline, loadtest.QueueSample{At: at, Waiting: 200 - i, Active: i % 50, Available: max(0, 100-i), Booked: min(i, 100)})
	}
	r.Fans = []*loadtest.Fan{{ID: 0, Admitted: true, AdmittedAt: 2 * time.Second, Outcome: loadtest.OutcomeConfirmed, SeatIDs: []string{"A1"}}}
	return r
}

func TestWriteRendersEveryFormat(t *testing.T) {
	s := loadtest.Summarize(sampleRun(), time.Second)
	d := Document{Summary: s, Violations: []loadtest.Violation{{Invariant: "stale-hold", Detail: "booking <b1> & co"}},
		Fans: sampleRun().Fans}
	dir, err := Write(t.TempDir(), d)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	for _, want := range []string{"<svg", "Holds per second", "Queue depth", "Latency histogram", "Queue wait (", "violations: 1", "&lt;b1&gt;"} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if strings.Contains(html, "<script src") || strings.Contains(html, "<link") {
		t.Errorf("report.html loads external resources; it must be self-contained")
	}
	var back Document
	b, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	if back.Summary.Steps[loadtest.StepHold].Count != 200 {
		t.Errorf("got %d holds in JSON, want 200", back.Summary.Steps[loadtest.StepHold].Count)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "fans.jsonl")); err != nil || !strings.Contains(string(b), `"outcome":"confirmed"`) {
		t.Errorf("fans.jsonl: %q, %v", b, err)
	}
	txt, _ := os.ReadFile(filepath.Join(dir, "report.txt"))
	if !strings.Contains(string(txt), "violations: 1") || !strings.Contains(string(txt), "hold") {
		t.Errorf("report.txt:\n%s", txt)
	}
}
