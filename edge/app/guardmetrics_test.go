package app

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/pow"
)

// TestGuardMetrics: a show's queue on with its default bot protection, guarded joins through the real edge move
// the guard's series on the operations port: a join without a proof is refused (proof-required) with a challenge
// issued at a difficulty within the histogram's buckets; the solved proof takes a place (solved, a solve time);
// the same proof brought by another fan is forged (failed), and a garbled one invalid (failed).
func TestGuardMetrics(t *testing.T) {
	t.Parallel()
	rdb := testRedis(t)
	show := newShow(t, rdb)
	onSale(t, rdb, show)
	const adminToken = "adm_edge_guard_0123456789"
	edge, ops := startEdgeOps(t, map[string]string{"ADMIN_TOKEN": adminToken})
	if res, b := do(t, "PUT", edge+"/admin/v1/shows/"+show+"/queue",
		`{"enabled":true,"admitPerSecond":1,"maxActive":1,"tokenTtlSeconds":60,"botProtection":{"baseDifficulty":1000}}`,
		map[string]string{"Authorization": "Bearer " + adminToken}); res.StatusCode != 200 {
		t.Fatalf("PUT queue settings: %d %s", res.StatusCode, b)
	}
	before := scrape(t, ops)

	join := func(user, proof string) (int, map[string]any) {
		t.Helper()
		body := ""
		if proof != "" {
			body = `{"proof":` + strconv.Quote(proof) + `}`
		}
		res, b := do(t, "POST", edge+"/queue/"+show+"/join", body,
			map[string]string{"Authorization": "Bearer " + userToken(t, user), "Content-Type": "application/json"})
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		return res.StatusCode, out
	}
	status, refusal := join("fan-a", "")
	ch, ok := refusal["challenge"]
	if status < 400 || !ok {
		t.Fatalf("join without a proof: %d %v, want a refusal carrying a challenge", status, refusal)
	}
	var c pow.Challenge
	raw, _ := json.Marshal(ch)
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	n, ok := pow.Solve(c, 1, nil)
	if !ok {
		t.Fatal("the challenge has no solution")
	}
	proof := pow.Encode(c, n, time.Millisecond)
	if status, q := join("fan-a", proof); status != 200 {
		t.Fatalf("join with the solved proof: %d %v", status, q)
	}
	if status, q := join("fan-b", proof); status < 400 {
		t.Fatalf("another fan's proof: %d %v, want a refusal", status, q)
	}
	if status, q := join("fan-c", "bm90IGEgcHJvb2Y"); status < 400 {
		t.Fatalf("a garbled proof: %d %v, want a refusal", status, q)
	}

	after := scrape(t, ops)
	moved := func(name string) float64 { return after.value(name) - before.value(name) }
	for _, w := range []struct {
		series string
		want   float64
	}{
		{"waitroom_challenges_issued_total", 2}, // fan-a's, and the fresh one the garbled proof's refusal carries
		{"waitroom_challenges_solved_total", 1},
		{"waitroom_challenges_failed_total", 2},
		{`waitroom_join_refusals_total{reason="proof-required"}`, 1},
		{`waitroom_join_refusals_total{reason="proof-forged"}`, 1},
		{`waitroom_join_refusals_total{reason="proof-invalid"}`, 1},
		{`waitroom_join_refusals_total{reason="prefix-blocked"}`, 0},
		{"waitroom_shadowed_total", 0},
		{"waitroom_solve_seconds_count", 1},
	} {
		if got := moved(w.series); got != w.want {
			t.Errorf("%s moved by %v, want %v", w.series, got, w.want)
		}
	}
	// Issued challenges are observed at their difficulty: the base of a fresh prefix, in the lowest buckets.
	if got := moved("waitroom_challenge_difficulty_count"); got != moved("waitroom_challenges_issued_total") {
		t.Errorf("difficulty observations %v, challenges issued %v", got, moved("waitroom_challenges_issued_total"))
	}
	if got := moved(`waitroom_challenge_difficulty_bucket{le="1000"}`); got < 1 {
		t.Errorf("no challenge in the 1e3 bucket (base difficulty 1000): %v", got)
	}
	if !after.has(`waitroom_join_refusals_total{reason="other"}`) {
		t.Error("the reasons' series are not all there from the start")
	}
}

// metricsPage is one scrape of /metrics: each sample's value by the series as the text format writes it
// (name{labels}).
type metricsPage map[string]float64

func (m metricsPage) value(series string) float64 { return m[series] }

func (m metricsPage) has(series string) bool { _, ok := m[series]; return ok }

// scrape reads the edge's /metrics on its operations address.
func scrape(t *testing.T, ops string) metricsPage {
	t.Helper()
	res, b := do(t, "GET", ops+"/metrics", "", nil)
	if res.StatusCode != 200 {
		t.Fatalf("/metrics: %d", res.StatusCode)
	}
	out := metricsPage{}
	for _, line := range strings.Split(string(b), "\n") {
		i := strings.LastIndexByte(line, ' ')
		if line == "" || line[0] == '#' || i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}
