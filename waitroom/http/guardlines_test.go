package http_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/flashseat/flashseat/shared/infra/redistest"
	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
	wrhttp "github.com/flashseat/flashseat/waitroom/http"
)

// TestGuardPartitioned: over three partitions a prefix still takes no more than its places in all, not its places
// on each partition, and a browser still holds one place whatever identity it shows, also when the second
// identity's partition is another than the first's.
func TestGuardPartitioned(t *testing.T) {
	t.Parallel()
	g := newGuarded(t, waitroom.Options{Tick: 50 * time.Millisecond})
	show := "g-" + uuid.NewString()[:13]
	g.shows = append(g.shows, show)
	const k, places = 3, 6
	body := fmt.Sprintf(`{"enabled":true,"admitPerSecond":0.001,"maxActive":100,"tokenTtlSeconds":600,"partitions":%d,`+
		`"botProtection":{"prefixPlaces":%d,"baseDifficulty":100,"maxDifficulty":100,"freeChallenges":1000}}`, k, places)
	if res, b := g.do(t, "PUT", "/admin/v1/shows/"+show+"/queue", "Bearer "+adminToken, body); res.StatusCode != 200 {
		t.Fatalf("put queue: %d %s", res.StatusCode, b)
	}
	t.Cleanup(func() { _ = redistest.DeleteShow(context.Background(), g.rdb, show) })

	// Twenty identities from one prefix: each partition lets it take its share, k·⌈6/3⌉ = 6 in all.
	const addr = "203.0.113.30"
	taken, limited := 0, 0
	for i := range 20 {
		u := "pl-" + strconv.Itoa(i)
		st, b := g.enter(t, show, u, addr, proofBody(solve(t, g.challenge(t, show, u, addr))))
		switch {
		case st == 200:
			taken++
		case st == 429 && strings.Contains(string(b), waitroom.ReasonPrefixLimited):
			limited++
		default:
			t.Fatalf("join %s: %d %s", u, st, b)
		}
	}
	if taken > places || taken < places-2 || limited != 20-taken {
		t.Fatalf("one prefix took %d places (%d refused) over %d partitions, want at most %d in all", taken, limited, k, places)
	}

	// One browser, identities on two partitions: the second is refused, as on a single queue.
	first, second := "br-a", ""
	for i := 0; second == ""; i++ {
		if u := "br-" + strconv.Itoa(i); rediskey.PartitionOf(u, k) != rediskey.PartitionOf(first, k) {
			second = u
		}
	}
	const lan = "203.0.113.40"
	cookie := wrhttp.BrowserCookie + "=" + strings.Repeat("ef", 16)
	if st, b := g.enter(t, show, first, lan, proofBody(solve(t, g.challenge(t, show, first, lan))), "Cookie", cookie); st != 200 {
		t.Fatalf("first identity of a browser: %d %s", st, b)
	}
	proof := proofBody(solve(t, g.challenge(t, show, second, lan)))
	st, b := g.enter(t, show, second, lan, proof, "Cookie", cookie)
	wantRefusal(t, st, b, 409, waitroom.ReasonBrowserInQueue, waitroom.ReasonBrowserInQueue)
	// The refusal did not spend the proof, and the first identity keeps its place from its browser.
	if st, b := g.enter(t, show, second, lan, proof, "Cookie", wrhttp.BrowserCookie+"="+strings.Repeat("0a", 16)); st != 200 {
		t.Fatalf("second identity from its own browser: %d %s", st, b)
	}
	if st, b := g.enter(t, show, first, lan, "", "Cookie", cookie); st != 200 {
		t.Fatalf("first identity again: %d %s", st, b)
	}
	f, err := g.svc.BotFigures(t.Context(), show)
	if err != nil {
		t.Fatal(err)
	}
	if f.Refused[waitroom.ReasonBrowserInQueue] != 1 || f.Refused[waitroom.ReasonPrefixLimited] != int64(limited) {
		t.Fatalf("figures over the partitions: %+v", f.Refused)
	}
}
