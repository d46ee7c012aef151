package app

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashseat/flashseat/waitroom"
)

// refusalReasons are the values of waitroom_join_refusals_total's reason label: the names of waitroom's table of
// reasons, and "other" for any the edge does not know (a newer waiting room's), so the label's values stay this
// fixed set.
var refusalReasons = func() []string {
	out := make([]string, 0, len(waitroom.Reasons)+1)
	for _, r := range waitroom.Reasons {
		out = append(out, r.Name)
	}
	return append(out, "other")
}()

// guardMetrics counts this replica's share of the guard's work (waitroom.Options.OnGuard). The series carry no
// show or prefix label: a crowd of scripts must not be able to grow the edge's series. The per-show figures are
// the console's (GET /admin/v1/shows/{id}/bots, across replicas, from Redis).
func guardMetrics(reg prometheus.Registerer) func(waitroom.GuardEvent) {
	issued := prometheus.NewCounter(prometheus.CounterOpts{Name: "waitroom_challenges_issued_total",
		Help: "Proof-of-work challenges this replica issued for new places."})
	solved := prometheus.NewCounter(prometheus.CounterOpts{Name: "waitroom_challenges_solved_total",
		Help: "Solved proofs of work that took a place through this replica."})
	failed := prometheus.NewCounter(prometheus.CounterOpts{Name: "waitroom_challenges_failed_total",
		Help: "Joins refused for a proof that did not hold: forged, invalid or expired, or replayed."})
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waitroom_join_refusals_total",
		Help: "Joins refused a new place by this replica's guard, by reason (the verdict)."}, []string{"reason"})
	shadowed := prometheus.NewCounter(prometheus.CounterOpts{Name: "waitroom_shadowed_total",
		Help: "Suspected bots given a shadow place (a place that never comes up) by this replica."})
	difficulty := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "waitroom_challenge_difficulty",
		Help:    "Difficulty (maxnumber: the most hashes a client may have to try) of the challenges issued.",
		Buckets: prometheus.ExponentialBucketsRange(1e3, 1e9, 13)})
	solve := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "waitroom_solve_seconds",
		Help:    "Time from a challenge's issue to the join that spent its proof (solving and the round trips).",
		Buckets: prometheus.ExponentialBuckets(0.025, 2, 14)})
	reg.MustRegister(issued, solved, failed, refused, shadowed, difficulty, solve)
	known := map[string]bool{}
	for _, r := range refusalReasons {
		refused.WithLabelValues(r) // every reason's series exists from the start, so rates see its first refusal
		known[r] = true
	}
	return func(e waitroom.GuardEvent) {
		switch e.Kind {
		case "issued":
			issued.Inc()
			difficulty.Observe(float64(e.Difficulty))
		case "solved":
			solved.Inc()
			if e.SolveTime >= 0 {
				solve.Observe(e.SolveTime.Seconds())
			}
		case "refused":
			reason := e.Reason
			if !known[reason] {
				reason = "other"
			}
			refused.WithLabelValues(reason).Inc()
			// A proof that came back and did not hold (as the show's challengesFailed counts them in Redis).
			if r, _ := waitroom.ReasonOf(reason); r.Failed {
				failed.Inc()
			}
		case "shadowed":
			shadowed.Inc()
		}
	}
}
