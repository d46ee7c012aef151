package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/loadtest/platformtest"
)

// TestMain lets the test binary be the load test's child process too: a split crowd runs its own executable
// again with childFlag, which here is this binary.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == childFlag {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadtest child:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestSplitCrowdOverProcessesAndReplicas plays one crowd in two child processes against two edge replicas of one
// platform, and checks that the parent merged them into one run: every fan once, the fairness check over all of
// them by the waiting room's tickets, the streams counted, and no violation from the fans or the stores. With
// -profile, each of the three processes leaves its CPU and heap profiles. The show's bot protection runs at base
// difficulty 100: the fans must join before the sale opens, to hear their tickets in position events before they
// are admitted, and at the preset's 10,000 the 400 fans' hashing under the race detector took the two processes
// past the opening.
func TestSplitCrowdOverProcessesAndReplicas(t *testing.T) {
	const fans = 400
	p := platformtest.Start(t, platformtest.Options{HoldTTL: 20 * time.Second, ReconcileInterval: 2 * time.Second,
		Edges: 2})
	profiles := t.TempDir()
	o := playClean(t, p, "-base", strings.Join(p.EdgeURLs, ","), "-procs", "2", "-source-ips", "2",
		"-fans", fmt.Sprint(fans), "-seats", "60", "-sale-delay", "3s", "-seed", "7", "-pay-mix", "ok=1",
		"-bot-difficulty", "100", "-profile", profiles)
	for _, name := range []string{"main", "child-1", "child-2"} {
		for _, kind := range []string{"cpu", "heap"} {
			// A profile is a gzipped protocol buffer: a file that is there and starts as one was written whole.
			b, err := os.ReadFile(filepath.Join(profiles, kind+"-"+name+".pprof"))
			if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
				t.Errorf("%s profile of %s: %d bytes, %v; want a gzipped profile", kind, name, len(b), err)
			}
		}
	}
	s := o.Summary
	if s.Fans != fans {
		t.Fatalf("got %d fans in the merged run, want %d", s.Fans, fans)
	}
	seen := map[int]bool{}
	for _, f := range o.Fans {
		if f.ID < 0 || f.ID >= fans || seen[f.ID] {
			t.Fatalf("fan id %d out of range or repeated", f.ID)
		}
		seen[f.ID] = true
	}
	if s.Admitted == 0 || s.Fairness.Tickets < s.Admitted/2 {
		t.Errorf("got %d admitted, %d with tickets, want admissions judged by ticket", s.Admitted, s.Fairness.Tickets)
	}
	if s.FansStreamed < fans/2 {
		t.Errorf("got %d fans following over SSE, want most of %d", s.FansStreamed, fans)
	}
	if s.SoldOutAfter <= 0 || s.Confirmed == 0 {
		t.Errorf("got sold out after %s and %d confirmed, want the crowd to sell the hall", s.SoldOutAfter, s.Confirmed)
	}
	for _, bad := range []string{loadtest.OutcomeError, loadtest.OutcomeRefused, loadtest.OutcomeCutOff} {
		if n := s.FanOutcomes[bad]; n > 0 {
			t.Errorf("got %d fans ending %s, want none; fans: %v", n, bad, s.FanOutcomes)
		}
	}
}
