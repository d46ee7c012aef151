package app

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/rediskey"
)

// TestPartitionedQueueAcrossEdges: two edge replicas serve a show whose queue the operator split over three
// partitions. Fans join one after another, alternately on each replica; each is told the fans ahead of them
// across every partition (their join's position is their place in the join order), and both replicas' ticks
// admit them in join order, each once, with the one rate the operator set.
func TestPartitionedQueueAcrossEdges(t *testing.T) {
	t.Parallel()
	rdb := testRedis(t)
	show := newShow(t, rdb)
	onSale(t, rdb, show)
	_, dbURL := pgtest.NewWithURL(t)
	const adminToken = "adm_edge_partitions_0123456789"
	env := map[string]string{"QUEUE_TICK": "20ms", "ADMIN_TOKEN": adminToken, "DATABASE_URL": dbURL}
	edges := []string{startEdge(t, env), startEdge(t, env)}
	admin := map[string]string{"Authorization": "Bearer " + adminToken}
	if res, b := do(t, "PUT", edges[0]+"/admin/v1/shows/"+show+"/queue", `{"enabled":true,"admitPerSecond":8,`+
		`"maxActive":1000,"tokenTtlSeconds":600,"partitions":3,"paused":true,"botProtection":{"enabled":false}}`,
		admin); res.StatusCode != 200 {
		t.Fatalf("PUT queue settings: %d %s", res.StatusCode, b)
	}
	time.Sleep(1100 * time.Millisecond) // both replicas' memory of the partition count
	type place struct {
		Status   string `json:"status"`
		Position int64  `json:"position"`
	}
	const n = 24
	fans := make([]string, n)
	lines := map[int]int{}
	for i := range fans {
		fans[i] = "pfan" + strconv.Itoa(i)
		lines[rediskey.PartitionOf(fans[i], 3)]++
		res, b := do(t, "POST", edges[i%2]+"/queue/"+show+"/join", "",
			map[string]string{"Authorization": "Bearer " + userToken(t, fans[i])})
		var p place
		if res.StatusCode != 200 || json.Unmarshal(b, &p) != nil || p.Status != "waiting" {
			t.Fatalf("join %s: %d %s", fans[i], res.StatusCode, b)
		}
		if p.Position != int64(i+1) {
			t.Errorf("%s joined %d-th and was told position %d", fans[i], i+1, p.Position)
		}
		time.Sleep(130 * time.Millisecond) // more than the order's 100 ms bound apart
	}
	if len(lines) < 3 {
		t.Fatalf("the fans did not spread over the partitions: %v", lines)
	}
	// Timed from before the resume: on a loaded machine its answer came after admissions had begun.
	start := time.Now()
	if res, b := do(t, "PUT", edges[1]+"/admin/v1/shows/"+show+"/queue", `{"paused":false}`, admin); res.StatusCode != 200 {
		t.Fatalf("resume: %d %s", res.StatusCode, b)
	}
	admittedAt := map[string]time.Time{}
	for deadline := start.Add(20 * time.Second); len(admittedAt) < n && time.Now().Before(deadline); time.Sleep(40 * time.Millisecond) {
		for i, u := range fans {
			if _, ok := admittedAt[u]; ok {
				continue
			}
			res, b := do(t, "GET", edges[(i+1)%2]+"/queue/"+show+"/status", "",
				map[string]string{"Authorization": "Bearer " + userToken(t, u)})
			var p place
			if res.StatusCode != 200 || json.Unmarshal(b, &p) != nil {
				t.Fatalf("status %s: %d %s", u, res.StatusCode, b)
			}
			if p.Status == "admitted" {
				admittedAt[u] = time.Now()
			}
		}
	}
	if len(admittedAt) != n {
		t.Fatalf("admitted %d of %d", len(admittedAt), n)
	}
	// The order is judged by when each admission was issued (the operator's view of a fan), not by when a poll
	// saw it: a poll round takes long on a loaded machine. Issue times are whole seconds (the token's iat), so
	// fans admitted in one second tie; a later joiner issued in an earlier second is an inversion.
	issued := make([]time.Time, n)
	for i, u := range fans {
		res, b := do(t, "GET", edges[i%2]+"/admin/v1/shows/"+show+"/fans/"+u, "", admin)
		var f struct {
			Status   string    `json:"status"`
			IssuedAt time.Time `json:"issuedAt"`
		}
		if res.StatusCode != 200 || json.Unmarshal(b, &f) != nil || f.Status != "admitted" || f.IssuedAt.IsZero() {
			t.Fatalf("the operator's view of %s: %d %s", u, res.StatusCode, b)
		}
		issued[i] = f.IssuedAt
	}
	for i := 1; i < n; i++ {
		if issued[i].Before(issued[i-1]) {
			t.Errorf("%s was admitted at %v, before %s (at %v), who joined before them", fans[i],
				issued[i].Format("15:04:05.000"), fans[i-1], issued[i-1].Format("15:04:05.000"))
		}
	}
	// Shared, 8 a second with at most a second's credit at the first tick (8 at once) lets the last of 24 in
	// 2 s after the first; each replica at 8 a second would take 1 s or less.
	if took := admittedAt[fans[n-1]].Sub(start); took < 1500*time.Millisecond {
		t.Errorf("24 fans at 8 a second over two replicas were all admitted in %v: the rate was not shared", took)
	}
}
