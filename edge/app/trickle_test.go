package app

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/audit"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/shared/infra/storetest"
	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/shared/token"
)

// TestStoreDownTrickle: the queue's Redis (a private redis-server) is killed under two shows. The one set to
// "trickle" keeps admitting, at its rate (counted over three seconds of a crowd asking as fast as it can), with
// tokens on record: the same fan asking again gets the same one, the rest are told 503 with Retry-After, and once
// Redis is back (empty) the tokens pass the gate and a kick finds them. The one left "closed" admits nobody: 503
// with Retry-After throughout.
func TestStoreDownTrickle(t *testing.T) {
	t.Parallel()
	rds := storetest.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: rds.Addr})
	t.Cleanup(func() { rdb.Close() })
	const adminToken = "adm_edge_trickle_0123456789"
	pool, dbURL := pgtest.NewWithURL(t)
	edge := startEdge(t, map[string]string{"REDIS_URL": rds.URL, "ADMIN_TOKEN": adminToken, "QUEUE_TICK": "50ms",
		"DATABASE_URL": dbURL})
	admin := map[string]string{"Authorization": "Bearer " + adminToken, "Content-Type": "application/json"}
	const rate = 4.0
	trickle, closed := newShow(t, rdb), newShow(t, rdb)
	for show, policy := range map[string]string{trickle: admission.StoreDownTrickle, closed: admission.StoreDownClosed} {
		onSale(t, rdb, show)
		body := fmt.Sprintf(`{"enabled":true,"admitPerSecond":0.001,"maxActive":1000,"tokenTtlSeconds":600,
			"botProtection":{"enabled":false},"whenStoreDown":{"policy":%q,"admitPerSecond":%v}}`, policy, rate)
		if res, b := do(t, "PUT", edge+"/admin/v1/shows/"+show+"/queue", body, admin); res.StatusCode != 200 {
			t.Fatalf("queue of %s: %d %s", policy, res.StatusCode, b)
		}
		// A line ahead, which the trickle does not wait for.
		if res, b := do(t, "POST", edge+"/queue/"+show+"/join", "", map[string]string{"Authorization": "Bearer " +
			userToken(t, "ahead")}); res.StatusCode != 200 {
			t.Fatalf("join %s before the outage: %d %s", policy, res.StatusCode, b)
		}
	}

	type answer struct {
		status     int
		retryAfter string
		token      string
		jti        string
	}
	verifier := token.NewVerifier(token.NewStaticKeys(testIssuer(t).Keys()...), 0)
	join := func(show, user string) answer {
		res, b := do(t, "POST", edge+"/queue/"+show+"/join", "", map[string]string{"Authorization": "Bearer " +
			userToken(t, user)})
		var st struct {
			Status         string `json:"status"`
			AdmissionToken string `json:"admissionToken"`
		}
		_ = json.Unmarshal(b, &st)
		a := answer{status: res.StatusCode, retryAfter: res.Header.Get("Retry-After")}
		switch {
		case res.StatusCode == 200 && st.Status == "admitted":
			a.token = st.AdmissionToken
			c, err := verifier.Verify(a.token, show, user)
			if err != nil {
				t.Errorf("a trickle token that does not verify: %v", err)
			} else {
				a.jti = c.ID
			}
		case res.StatusCode == 503:
			var p problem.Problem
			if json.Unmarshal(b, &p) != nil || p.Type != problem.TypeBase+problem.StoreUnavailable {
				t.Errorf("503 of %s", b)
			}
		}
		return a
	}

	rds.Kill()
	// The trickle opens once this replica has found the store down (probed on a failed join).
	first := ""
	for deadline := time.Now().Add(15 * time.Second); first == ""; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the trickle never admitted anyone with Redis down")
		}
		if a := join(trickle, "first"); a.token != "" {
			first = a.token
		}
	}
	// The closed show's first failed join finds its store down too, after which its fans are told at once.
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		began := time.Now()
		if a := join(closed, "first"); a.status != 503 || a.retryAfter == "" {
			t.Fatalf("the closed show with Redis down: %+v, want 503 with Retry-After", a)
		}
		if time.Since(began) < 200*time.Millisecond {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the closed show's fans still wait for the dead store to fail them")
		}
	}
	if a := join(trickle, "first"); a.token != first {
		t.Errorf("the first fan, asking again, got %+v, want the same token", a)
	}

	// A crowd for three seconds, each request a new fan, on both shows.
	const window = 3 * time.Second
	var mu sync.Mutex
	admitted := map[string]string{} // jti -> token, of the trickle show
	var refused, closedAnswers int
	var wg sync.WaitGroup
	end := time.Now().Add(window)
	for g := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; time.Now().Before(end); n++ {
				show := trickle
				if n%4 == 3 {
					show = closed
				}
				a := join(show, fmt.Sprintf("crowd-%d-%d", g, n))
				mu.Lock()
				switch {
				case show == closed:
					closedAnswers++
					if a.status != 503 || a.retryAfter == "" {
						t.Errorf("the closed show with Redis down: %d (Retry-After %q), want 503 with Retry-After", a.status, a.retryAfter)
					}
				case a.jti != "":
					admitted[a.jti] = a.token
				case a.status == 503 && a.retryAfter != "":
					refused++
				default:
					t.Errorf("the trickle show with Redis down: %d (Retry-After %q)", a.status, a.retryAfter)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	want := rate * window.Seconds()
	if n := float64(len(admitted)); n < want-3 || n > want+2 {
		t.Errorf("the trickle admitted %v fans in %v at %v a second, want about %v", n, window, rate, want)
	}
	if refused < 10*len(admitted) || closedAnswers == 0 {
		t.Errorf("%d refused beside %d admitted, %d closed answers: the crowd was not asking", refused, len(admitted), closedAnswers)
	}

	// An operator's change with Redis down is recorded (503: the cache could not be told) and audited.
	if res, b := do(t, "PUT", edge+"/admin/v1/shows/"+closed+"/queue", `{"whenStoreDown":{"admitPerSecond":2}}`,
		admin); res.StatusCode != 503 {
		t.Fatalf("a change with Redis down: %d %s, want 503", res.StatusCode, b)
	}
	entries, err := audit.New(pool).List(t.Context(), audit.Filter{ShowID: closed})
	if err != nil {
		t.Fatal(err)
	}
	var old, now admission.Settings
	if len(entries) == 0 || json.Unmarshal(entries[0].Old, &old) != nil || json.Unmarshal(entries[0].New, &now) != nil ||
		old.WhenStoreDown.AdmitPerSecond != rate || now.WhenStoreDown.AdmitPerSecond != 2 {
		t.Errorf("the change made with Redis down is not the newest of %d audit entries: its rate %v -> %v",
			len(entries), old.WhenStoreDown.AdmitPerSecond, now.WhenStoreDown.AdmitPerSecond)
	}

	// Redis is back, empty: the keeper restores the show from the record, the trickle's admissions with it.
	rds.Start()
	gate := func(tok string) int {
		res, _ := do(t, "GET", edge+"/queue/"+trickle+"/gate", "", map[string]string{admission.Header: tok})
		return res.StatusCode
	}
	var jti, tok string
	for jti, tok = range admitted {
		break
	}
	for deadline := time.Now().Add(15 * time.Second); gate(first) != 204; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a trickle token with Redis back: gate %d, want 204", gate(first))
		}
	}
	for j, tk := range admitted {
		if s := gate(tk); s != 204 {
			t.Errorf("trickle admission %s with Redis back: gate %d, want 204", j, s)
		}
	}
	if res, b := do(t, "POST", edge+"/admin/v1/shows/"+trickle+"/admissions/"+jti+"/revoke", "", admin); res.StatusCode != 200 {
		t.Fatalf("kick %s: %d %s", jti, res.StatusCode, b)
	}
	if s := gate(tok); s != 403 {
		t.Errorf("a kicked trickle admission: gate %d, want 403", s)
	}
}
