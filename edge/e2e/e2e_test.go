package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/loadtest/platformtest"
	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/admission/admissiontest"
	"github.com/flashseat/flashseat/shared/infra/redistest"
	"github.com/flashseat/flashseat/shared/pow"
	"github.com/flashseat/flashseat/shared/token"
)

// platform is booking and the edge in front of it.
type platform struct {
	edge, booking string
	// edgeDirect is the edge itself, not through the contract check: for what a proxy in between would hide.
	edgeDirect string
	// edgeOps and bookingOps are the services' operations addresses (OPS_ADDR): /metrics, pprof, probes.
	edgeOps, bookingOps string
	show                string
	issuer              *token.Issuer
	rdb                 redis.UniversalClient
}

// start runs booking on a fresh database with the demo show, and the edge in front of it, on the test's Redis
// (redistest); both stop at cleanup.
func start(tb testing.TB, edgeEnv map[string]string) *platform {
	tb.Helper()
	return startOn(tb, redistest.New(tb), edgeEnv)
}

// startOn is start on a given Redis: a single one or a cluster. It is platformtest's platform with booking's
// own defaults for holds, reconciliation and the edge's rate limits (platformtest shortens and raises them for
// its load tests), the demo show seeded, and the operations listeners on.
func startOn(tb testing.TB, r *redistest.Redis, edgeEnv map[string]string) *platform {
	tb.Helper()
	edge := map[string]string{"RATE_PER_USER": "", "RATE_PER_USER_BURST": ""}
	maps.Copy(edge, edgeEnv)
	opts := platformtest.Options{HoldTTL: 10 * time.Minute, ReconcileInterval: 30 * time.Second,
		AdminToken: adminToken, Ops: true, Booking: map[string]string{"SEED_DEMO": "true"}, Edge: edge}
	if r.Target == redistest.Cluster {
		opts.RedisClusterAddrs = r.Addrs
	} else {
		opts.RedisURL = r.URL
	}
	pt := platformtest.Start(tb, opts) // deletes the demo show's keys once the platform has stopped

	var events struct {
		Events []struct {
			Shows []struct {
				ShowID string `json:"showId"`
			} `json:"shows"`
		} `json:"events"`
	}
	getJSON(tb, pt.BookingURL+"/api/v1/events?city=Bangalore", &events)
	if len(events.Events) == 0 || len(events.Events[0].Shows) == 0 {
		tb.Fatal("no demo show")
	}
	show := events.Events[0].Shows[0].ShowID
	return &platform{edge: pt.BaseURL, edgeDirect: pt.EdgeURLs[0], booking: pt.BookingURL, edgeOps: pt.EdgeOpsURL, bookingOps: pt.BookingOpsURL,
		show: show, issuer: pt.Issuer, rdb: r.Client}
}

var client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

func getJSON(tb testing.TB, url string, v any) {
	tb.Helper()
	resp, err := client.Get(url)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		tb.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		tb.Fatal(err)
	}
}

func send(tb testing.TB, method, url, body string, hdr map[string]string) (int, []byte) {
	tb.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, r)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func guest(tb testing.TB, p *platform) (user, tok string) {
	tb.Helper()
	status, b := send(tb, "POST", p.edge+"/api/v1/auth/guest", "", nil)
	if status != 201 {
		tb.Fatalf("guest: %d %s", status, b)
	}
	var g struct{ UserID, Token string }
	if err := json.Unmarshal(b, &g); err != nil {
		tb.Fatal(err)
	}
	return g.UserID, g.Token
}

// solve solves the proof-of-work challenge a refused join's problem carries (status 403), as a fan's page does,
// and returns the solution to send as the join's "proof"; false when the answer asks for none.
func solve(tb testing.TB, status int, body []byte) (string, bool) {
	tb.Helper()
	var p struct {
		Challenge *pow.Challenge `json:"challenge"`
	}
	if status != http.StatusForbidden || json.Unmarshal(body, &p) != nil || p.Challenge == nil {
		return "", false
	}
	n, ok := pow.Solve(*p.Challenge, 1, nil)
	if !ok {
		tb.Fatalf("a challenge with no solution: %s", body)
	}
	return pow.Encode(*p.Challenge, n, time.Millisecond), true
}

func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }

// Through the edge, a fan reads the seat map and holds seats; with the queue on, the edge refuses without an
// admission token and passes with one, and booking accepts the same token. The platform runs on a single Redis,
// then on a Redis Cluster.
func TestThroughTheEdge(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, r *redistest.Redis) { testThroughTheEdge(t, startOn(t, r, nil)) })
}

func testThroughTheEdge(t *testing.T, p *platform) {
	user, tok := guest(t, p)
	auth := map[string]string{"Authorization": "Bearer " + tok, "Accept": "application/json"}

	status, b := send(t, "GET", p.edge+"/api/v1/shows/"+p.show+"/seats", "", nil)
	if status != 200 || !strings.Contains(string(b), `"seatId"`) {
		t.Fatalf("seat map through the edge: %d %.200s", status, b)
	}

	admissiontest.SetSettings(t, p.rdb, p.show, admission.Settings{Enabled: true,
		AdmitPerSecond: 10, MaxActive: 100, TokenTTLSeconds: 600})
	// An operator's switch reaches every replica within a second (pub/sub, else the gate's one-second cache).
	for deadline := time.Now().Add(1500 * time.Millisecond); ; time.Sleep(20 * time.Millisecond) {
		if status, _ := send(t, "GET", p.edge+"/api/v1/shows/"+p.show+"/seats", "", nil); status == 403 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("seat map still %d 1.5s after the queue was switched on", status)
		}
	}
	hold := fmt.Sprintf(`{"showId":%q,"seatIds":["E5","E6"]}`, p.show)
	if status, b := send(t, "POST", p.edge+"/api/v1/bookings/hold", hold, auth); status != 403 ||
		!strings.Contains(string(b), `"queueUrl":"/queue/`+p.show+`"`) {
		t.Fatalf("hold without admission: %d %s", status, b)
	}
	adm, _, err := p.issuer.Issue(user, p.show, uuid.NewString(), time.Now(), 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	withAdm := map[string]string{"Authorization": "Bearer " + tok, admission.Header: adm}
	status, b = send(t, "POST", p.edge+"/api/v1/bookings/hold", hold, withAdm)
	if status != 201 || !strings.Contains(string(b), `"HELD"`) {
		t.Fatalf("hold with admission: %d %s", status, b)
	}
	// Another fan's token does not carry this fan through.
	_, tok2 := guest(t, p)
	if status, _ := send(t, "POST", p.edge+"/api/v1/bookings/hold", hold,
		map[string]string{"Authorization": "Bearer " + tok2, admission.Header: adm}); status != 403 {
		t.Fatalf("someone else's admission token: %d", status)
	}
}
