package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/flashseat/flashseat/shared/audit"
	"github.com/flashseat/flashseat/shared/pow"
	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/shared/token"
	"github.com/flashseat/flashseat/waitroom"
	wrhttp "github.com/flashseat/flashseat/waitroom/http"
	"github.com/flashseat/flashseat/waitroom/internal/wrtest"
	wrredis "github.com/flashseat/flashseat/waitroom/redis"
	"github.com/flashseat/flashseat/waitroom/siteverify"
	"github.com/flashseat/flashseat/waitroom/siteverify/siteverifytest"
)

// clientHeader names the test client's address: the guard's ClientAddr reads it here, where the edge reads the
// trusted-proxy policy's answer.
const clientHeader = "X-Test-Client"

// guarded is a waiting room with the guard on: a proof-of-work issuer, a human check speaking siteverify to a
// local server, and the client address the test names.
type guarded struct {
	*server
	pow   *pow.Issuer
	human *siteverifytest.Server
	idp   token.Key // the external identity provider's key: its tokens are accounts, not guests
}

type humanAdapter struct{ v *siteverify.Verifier }

func (h humanAdapter) Verify(ctx context.Context, response, ip string) (bool, error) {
	err := h.v.Verify(ctx, response, ip)
	switch {
	case err == nil:
		return true, nil
	case strings.Contains(err.Error(), "unavailable"):
		return false, err
	}
	return false, nil
}

func newGuarded(t *testing.T, opt waitroom.Options) *guarded {
	t.Helper()
	k, err := token.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	is := token.NewIssuer(k)
	secret, err := is.Derive("test pow")
	if err != nil {
		t.Fatal(err)
	}
	p, err := pow.NewIssuer(secret)
	if err != nil {
		t.Fatal(err)
	}
	hs := siteverifytest.New(t)
	v, err := siteverify.New(hs.Config())
	if err != nil {
		t.Fatal(err)
	}
	opt.PoW, opt.Human, opt.HumanWidget = p, humanAdapter{v}, v.Widget()
	// The external identity provider: its JWKS on a local server, its tokens signed with EdDSA.
	idp, err := token.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(token.NewIssuer(idp).JWKS())
	}))
	t.Cleanup(jwks.Close)
	users := token.NewUserVerifier(userSecret, &token.External{JWKSURL: jwks.URL, Issuer: "https://id.test/",
		Audience: "fans"}, 0)
	rdb := redisClient(t)
	svc := wrtest.Service(t, wrredis.New(rdb), rdb, is, opt)
	h := wrhttp.New(wrhttp.Config{Service: svc, Users: users, Issuer: is,
		AdminToken: adminToken, Audit: audit.New(wrtest.Database(t)),
		ClientAddr: func(c *fiber.Ctx) netip.Addr {
			a, _ := netip.ParseAddr(c.Get(clientHeader, "198.51.100.1"))
			return a
		}})
	app := edgeApp()
	h.Mount(app)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = svc.Run(ctx) }()
	ui, _ := token.NewUserIssuer(userSecret)
	s := &server{base: "http://" + ln.Addr().String(), rdb: rdb, svc: svc, users: ui, issuer: is, app: app}
	t.Cleanup(func() {
		h.Close()
		_ = app.ShutdownWithTimeout(2 * time.Second)
		cancel()
		<-done
		for _, show := range s.shows {
			rdb.Del(context.Background(), wrredis.Keys(show)...)
		}
	})
	return &guarded{server: s, pow: p, human: hs, idp: idp}
}

// account is a user token of the external identity provider for user: a signed-in account, not a guest.
func (g *guarded) account(t *testing.T, user string) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.RegisteredClaims{Subject: user, Issuer: "https://id.test/",
		Audience: jwt.ClaimStrings{"fans"}, ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))})
	tok.Header["kid"] = g.idp.ID
	raw, err := tok.SignedString(g.idp.Private)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// guardedShow is a show with its queue on at rate, bot protection on with bot's members.
func (g *guarded) guardedShow(t *testing.T, rate float64, bot string) string {
	t.Helper()
	show := "g-" + uuid.NewString()[:13]
	g.shows = append(g.shows, show)
	body := fmt.Sprintf(`{"enabled":true,"admitPerSecond":%v,"maxActive":100,"tokenTtlSeconds":600,"botProtection":%s}`,
		rate, bot)
	if res, b := g.do(t, "PUT", "/admin/v1/shows/"+show+"/queue", "Bearer "+adminToken, body); res.StatusCode != 200 {
		t.Fatalf("put queue: %d %s", res.StatusCode, b)
	}
	return show
}

type refusal struct {
	Type      string          `json:"type"`
	Status    int             `json:"status"`
	Reason    string          `json:"reason"`
	Challenge *pow.Challenge  `json:"challenge"`
	Human     json.RawMessage `json:"humanCheck"`
}

// challenge fetches a challenge for user from addr.
func (g *guarded) challenge(t *testing.T, show, user, addr string) pow.Challenge {
	t.Helper()
	res, b := g.do(t, "GET", "/queue/"+show+"/challenge", "Bearer "+g.user(t, user), "", clientHeader, addr)
	var c pow.Challenge
	if res.StatusCode != 200 || json.Unmarshal(b, &c) != nil || c.Challenge == "" {
		t.Fatalf("challenge: %d %s", res.StatusCode, b)
	}
	return c
}

func solve(t *testing.T, c pow.Challenge) string {
	t.Helper()
	n, ok := pow.Solve(c, 2, nil)
	if !ok {
		t.Fatal("no solution")
	}
	return pow.Encode(c, n, time.Millisecond)
}

// enter joins user from addr with body and returns the status and body.
func (g *guarded) enter(t *testing.T, show, user, addr, body string, headers ...string) (int, []byte) {
	t.Helper()
	res, b := g.do(t, "POST", "/queue/"+show+"/join", "Bearer "+g.user(t, user), body,
		append([]string{clientHeader, addr}, headers...)...)
	return res.StatusCode, b
}

func (g *guarded) waiting(t *testing.T, show string) int64 {
	t.Helper()
	_, c, err := g.svc.Settings(context.Background(), show)
	if err != nil {
		t.Fatal(err)
	}
	return c.Waiting
}

func proofBody(p string) string { return `{"proof":"` + p + `"}` }

func wantRefusal(t *testing.T, status int, b []byte, wantStatus int, slug, reason string) refusal {
	t.Helper()
	var r refusal
	if err := json.Unmarshal(b, &r); err != nil || status != wantStatus || r.Type != problem.TypeBase+slug ||
		r.Reason != reason {
		t.Fatalf("got %d %s, want %d %s (%s)", status, b, wantStatus, slug, reason)
	}
	return r
}

// TestGuardRefusals: every way a join can fail to earn a new place is a problem+json 4xx naming the reason, with
// what the client needs to try again where it can, and none of them takes a place.
func TestGuardRefusals(t *testing.T) {
	t.Parallel()
	g := newGuarded(t, waitroom.Options{Tick: 50 * time.Millisecond})
	show := g.guardedShow(t, 0.001, `{"prefixPlaces":2}`)
	other := g.guardedShow(t, 0.001, `{}`)
	const addr = "203.0.113.10"

	// No proof: 403 with a challenge to solve.
	st, b := g.enter(t, show, "u-none", addr, "")
	r := wantRefusal(t, st, b, 403, waitroom.ReasonProofRequired, waitroom.ReasonProofRequired)
	if r.Challenge == nil || r.Challenge.MaxNumber < 1 {
		t.Fatalf("no challenge in %s", b)
	}
	// Malformed JSON body: 400.
	if st, b := g.enter(t, show, "u-none", addr, "{"); st != 400 {
		t.Fatalf("malformed body: %d %s", st, b)
	}

	c := g.challenge(t, show, "u-forge", addr)
	good := solve(t, c)
	n, _ := pow.Solve(c, 2, nil)
	forged := pow.Encode(c, n+1, 0)
	st, b = g.enter(t, show, "u-forge", addr, proofBody(forged))
	wantRefusal(t, st, b, 422, waitroom.ReasonProofInvalid, waitroom.ReasonProofForged)
	// Someone else's proof.
	st, b = g.enter(t, show, "u-thief", addr, proofBody(good))
	wantRefusal(t, st, b, 422, waitroom.ReasonProofInvalid, waitroom.ReasonProofForged)
	// Another show's proof.
	oc := g.challenge(t, other, "u-other", addr)
	st, b = g.enter(t, show, "u-other", addr, proofBody(solve(t, oc)))
	wantRefusal(t, st, b, 422, waitroom.ReasonProofInvalid, waitroom.ReasonProofForged)
	// Expired: a challenge issued long ago under the same key.
	old, err := g.pow.Issue(pow.Terms{Scope: pow.ShowScope(show), Identity: "u-late", MaxNumber: 10, TTL: time.Minute},
		time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	st, b = g.enter(t, show, "u-late", addr, proofBody(solve(t, old)))
	if r := wantRefusal(t, st, b, 422, waitroom.ReasonProofInvalid, waitroom.ReasonProofInvalid); r.Challenge == nil {
		t.Fatalf("expired proof: no fresh challenge in %s", b)
	}
	if w := g.waiting(t, show); w != 0 {
		t.Fatalf("refused joins took %d places", w)
	}

	// The good proof takes a place; joining again keeps it without another proof.
	if st, b := g.enter(t, show, "u-forge", addr, proofBody(good)); st != 200 {
		t.Fatalf("good proof: %d %s", st, b)
	}
	if st, b := g.enter(t, show, "u-forge", addr, ""); st != 200 {
		t.Fatalf("re-join with a place: %d %s", st, b)
	}
	// Replayed after the place is gone: kicked, the fan's place is gone, and the spent proof buys nothing.
	g.do(t, "POST", "/admin/v1/shows/"+show+"/fans/u-forge/revoke", "Bearer "+adminToken, "")
	g.rdb.ZRem(context.Background(), wrredis.Wait(show), "u-forge")
	st, b = g.enter(t, show, "u-forge", addr, proofBody(good))
	wantRefusal(t, st, b, 409, waitroom.ReasonProofReplayed, waitroom.ReasonProofReplayed)

	// The prefix's second place, then its limit.
	if st, b := g.enter(t, show, "u-two", addr, proofBody(solve(t, g.challenge(t, show, "u-two", addr)))); st != 200 {
		t.Fatalf("second place: %d %s", st, b)
	}
	st, b = g.enter(t, show, "u-three", addr, proofBody(solve(t, g.challenge(t, show, "u-three", addr))))
	wantRefusal(t, st, b, 429, waitroom.ReasonPrefixLimited, waitroom.ReasonPrefixLimited)

	// A browser session holds one place, whatever identity it shows.
	const lan = "203.0.113.20"
	cookie := wrhttp.BrowserCookie + "=" + strings.Repeat("ab", 16)
	if st, b := g.enter(t, show, "b-one", lan, proofBody(solve(t, g.challenge(t, show, "b-one", lan))), "Cookie", cookie); st != 200 {
		t.Fatalf("first identity of a browser: %d %s", st, b)
	}
	twoProof := proofBody(solve(t, g.challenge(t, show, "b-two", lan)))
	st, b = g.enter(t, show, "b-two", lan, twoProof, "Cookie", cookie)
	wantRefusal(t, st, b, 409, waitroom.ReasonBrowserInQueue, waitroom.ReasonBrowserInQueue)
	// The refusal did not spend the proof: from a browser of its own, the same identity joins with it.
	if st, b := g.enter(t, show, "b-two", lan, twoProof, "Cookie", wrhttp.BrowserCookie+"="+strings.Repeat("cd", 16)); st != 200 {
		t.Fatalf("second identity from its own browser: %d %s", st, b)
	}

	// An operator blocks a prefix (IPv6: its /64).
	if res, b := g.do(t, "POST", "/admin/v1/shows/"+show+"/blocked-prefixes", "Bearer "+adminToken,
		`{"prefix":"2001:db8:1:2::/64"}`); res.StatusCode != 200 {
		t.Fatalf("block: %d %s", res.StatusCode, b)
	}
	time.Sleep(1100 * time.Millisecond) // settings are read through a second-long cache at most
	const v6 = "2001:db8:1:2:aaaa::9"
	st, b = g.enter(t, show, "u-v6", v6, proofBody(solve(t, g.challenge(t, show, "u-v6", v6))))
	wantRefusal(t, st, b, 403, waitroom.ReasonPrefixBlocked, waitroom.ReasonPrefixBlocked)

	if w := g.waiting(t, show); w != 3 {
		t.Fatalf("waiting: got %d, want the 3 places earned and kept", w)
	}
	f, err := g.svc.BotFigures(context.Background(), show)
	if err != nil {
		t.Fatal(err)
	}
	if f.Solved != 4 || f.Failed < 4 || f.Refused[waitroom.ReasonProofRequired] != 1 ||
		f.Refused[waitroom.ReasonPrefixLimited] != 1 || len(f.TopPrefixes) == 0 || f.TopPrefixes[0].Places != 2 {
		t.Fatalf("figures: %+v", f)
	}
	res, fb := g.do(t, "GET", "/admin/v1/shows/"+show+"/bots", "Bearer "+adminToken, "")
	if res.StatusCode != 200 || !strings.Contains(string(fb), `"challengesSolved":4`) {
		t.Fatalf("GET bots: %d %s", res.StatusCode, fb)
	}
}

// TestGuardShadow: with suspects shadowed, a blocked prefix's join looks like any other and never comes up.
func TestGuardShadow(t *testing.T) {
	t.Parallel()
	g := newGuarded(t, waitroom.Options{Tick: 50 * time.Millisecond})
	show := g.guardedShow(t, 1000, `{"suspects":"shadow","blockedPrefixes":"203.0.113.66"}`)
	const bad = "203.0.113.66"
	st, b := g.enter(t, show, "shadowy", bad, proofBody(solve(t, g.challenge(t, show, "shadowy", bad))))
	var s state
	if st != 200 || json.Unmarshal(b, &s) != nil || s.Status != "waiting" || s.Position < 1 ||
		!strings.Contains(string(b), `"receipt"`) {
		t.Fatalf("shadow join: %d %s", st, b)
	}
	// An honest fan joins after and is admitted; the shadowed one never is.
	const good = "203.0.113.67"
	if st, b := g.enter(t, show, "honest", good, proofBody(solve(t, g.challenge(t, show, "honest", good)))); st != 200 {
		t.Fatalf("honest join: %d %s", st, b)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, b := g.do(t, "GET", "/queue/"+show+"/status", "Bearer "+g.user(t, "honest"), "", clientHeader, good)
		if res.StatusCode == 200 && strings.Contains(string(b), `"admitted"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("honest fan not admitted: %s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := 0; i < 10; i++ {
		res, b := g.do(t, "GET", "/queue/"+show+"/status", "Bearer "+g.user(t, "shadowy"), "", clientHeader, bad)
		if res.StatusCode != 200 || !strings.Contains(string(b), `"waiting"`) {
			t.Fatalf("shadowed fan: %d %s", res.StatusCode, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if w := g.waiting(t, show); w != 0 {
		t.Fatalf("the shadow place is in the line: waiting %d", w)
	}
}

// TestGuardHumanAndAccounts: a show asking for the human check refuses a join without its token or with a bad
// one, and takes one that passed; an accounts-only show refuses guests.
func TestGuardHumanAndAccounts(t *testing.T) {
	t.Parallel()
	g := newGuarded(t, waitroom.Options{Tick: 50 * time.Millisecond})
	show := g.guardedShow(t, 0.001, `{"humanCheck":true}`)
	const addr = "192.0.2.5"
	res, b := g.do(t, "GET", "/queue/"+show+"/challenge", "Bearer "+g.user(t, "h1"), "", clientHeader, addr)
	if res.StatusCode != 200 || !strings.Contains(string(b), `"humanCheck"`) {
		t.Fatalf("challenge with a human check: %d %s", res.StatusCode, b)
	}
	proof := solve(t, g.challenge(t, show, "h1", addr))
	st, b := g.enter(t, show, "h1", addr, proofBody(proof))
	if r := wantRefusal(t, st, b, 403, waitroom.ReasonHumanCheckRequired, waitroom.ReasonHumanCheckRequired); len(r.Human) == 0 {
		t.Fatalf("no widget in %s", b)
	}
	st, b = g.enter(t, show, "h1", addr, `{"proof":"`+proof+`","humanToken":"not-a-token"}`)
	wantRefusal(t, st, b, 403, waitroom.ReasonHumanCheckFailed, waitroom.ReasonHumanCheckFailed)
	if st, b := g.enter(t, show, "h1", addr, `{"proof":"`+proof+`","humanToken":"`+g.human.Token()+`"}`); st != 200 {
		t.Fatalf("human check passed: %d %s", st, b)
	}
	if reqs := g.human.Requests(); len(reqs) == 0 || reqs[len(reqs)-1].RemoteIP != addr {
		t.Fatalf("siteverify requests: %+v", reqs)
	}

	accounts := g.guardedShow(t, 0.001, `{"accountsOnly":true}`)
	st, b = g.enter(t, accounts, "guest", addr, proofBody(solve(t, g.challenge(t, accounts, "guest", addr))))
	wantRefusal(t, st, b, 403, waitroom.ReasonAccountRequired, waitroom.ReasonAccountRequired)
	// A signed-in account of the identity provider joins, one place for the account.
	acct := "Bearer " + g.account(t, "acct-1")
	res, b = g.do(t, "GET", "/queue/"+accounts+"/challenge", acct, "", clientHeader, addr)
	var ch pow.Challenge
	if res.StatusCode != 200 || json.Unmarshal(b, &ch) != nil {
		t.Fatalf("account's challenge: %d %s", res.StatusCode, b)
	}
	for i := 0; i < 2; i++ {
		res, b = g.do(t, "POST", "/queue/"+accounts+"/join", acct, proofBody(solve(t, ch)), clientHeader, addr)
		if res.StatusCode != 200 {
			t.Fatalf("account's join %d: %d %s", i, res.StatusCode, b)
		}
	}
	if w := g.waiting(t, accounts); w != 1 {
		t.Fatalf("accounts-only show: %d places, want the account's one", w)
	}
}

// TestChallengeDifficulty: one prefix's challenges get steeply harder after the free ones; another prefix's do not.
func TestChallengeDifficulty(t *testing.T) {
	t.Parallel()
	g := newGuarded(t, waitroom.Options{Tick: 50 * time.Millisecond})
	show := g.guardedShow(t, 0.001, `{"baseDifficulty":1000,"maxDifficulty":64000,"freeChallenges":2,"doublingChallenges":1}`)
	var got []int64
	for i := 0; i < 9; i++ {
		got = append(got, g.challenge(t, show, fmt.Sprint("d", i), "198.51.100.7").MaxNumber)
	}
	// The count decays while the test runs (a 600 s half-life), so each is a hair under its power of two.
	want := []int64{1000, 1000, 1000, 2000, 4000, 8000, 16000, 32000, 64000}
	for i := range want {
		if got[i] > want[i] || got[i] < want[i]*99/100 {
			t.Fatalf("difficulties: got %v, want about %v", got, want)
		}
	}
	if d := g.challenge(t, show, "fresh", "198.51.100.8").MaxNumber; d != 1000 {
		t.Fatalf("another prefix: got %d, want 1000", d)
	}
	// Off: nothing to earn.
	off := g.guardedShow(t, 0.001, `{"enabled":false}`)
	if res, _ := g.do(t, "GET", "/queue/"+off+"/challenge", "Bearer "+g.user(t, "x"), ""); res.StatusCode != http.StatusNoContent {
		t.Fatalf("challenge with protection off: %d", res.StatusCode)
	}
	if st, b := g.enter(t, off, "x", "198.51.100.9", ""); st != 200 {
		t.Fatalf("join with protection off: %d %s", st, b)
	}
}

// TestTurnHeldForAbsentFan: a fan whose phone slept through their turn (no heartbeat within the grace period) is
// skipped; coming back with their place receipt within the show's turn hold, they are at the head of the line,
// ahead of the fans who were behind them. After the hold, they start again at the back.
func TestTurnHeldForAbsentFan(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		hold     int
		position int64
	}{{"within the hold", 600, 1}, {"after the hold", 0, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, waitroom.Options{Tick: 50 * time.Millisecond, Grace: 600 * time.Millisecond,
				HeartbeatEvery: 100 * time.Millisecond}, nil)
			show := s.show(t, 0.001, 1)
			if res, b := s.do(t, "PUT", "/admin/v1/shows/"+show+"/queue", "Bearer "+adminToken,
				fmt.Sprintf(`{"turnHoldSeconds":%d}`, tc.hold)); res.StatusCode != 200 {
				t.Fatalf("turn hold: %d %s", res.StatusCode, b)
			}
			var receipt struct {
				Receipt string `json:"receipt"`
			}
			res, b := s.do(t, "POST", "/queue/"+show+"/join", "Bearer "+s.user(t, "sleeper"), "")
			if res.StatusCode != 200 || json.Unmarshal(b, &receipt) != nil || receipt.Receipt == "" {
				t.Fatalf("join: %d %s", res.StatusCode, b)
			}
			s.join(t, show, "next")
			s.join(t, show, "after")
			poll := func(user string) state {
				res, b := s.do(t, "GET", "/queue/"+show+"/status", "Bearer "+s.user(t, user), "")
				var st state
				if res.StatusCode != 200 || json.Unmarshal(b, &st) != nil {
					t.Fatalf("status %s: %d %s", user, res.StatusCode, b)
				}
				return st
			}
			// The others keep polling; the sleeper is silent past the grace period. Then the line moves: the
			// sleeper is skipped and "next" takes the one slot.
			for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
				poll("next")
				poll("after")
			}
			s.do(t, "PUT", "/admin/v1/shows/"+show+"/queue", "Bearer "+adminToken, `{"admitPerSecond":100}`)
			for end := time.Now().Add(5 * time.Second); poll("next").Status != "admitted"; time.Sleep(50 * time.Millisecond) {
				poll("after")
				if time.Now().After(end) {
					t.Fatal("next was not admitted")
				}
			}
			if st := poll("after"); st.Position != 1 {
				t.Fatalf("after: position %d, want 1 once the sleeper was skipped", st.Position)
			}
			// The sleeper wakes and polls with their receipt.
			res, b = s.do(t, "GET", "/queue/"+show+"/status", "Bearer "+s.user(t, "sleeper"), "",
				"X-Place-Receipt", receipt.Receipt)
			var st state
			if res.StatusCode != 200 || json.Unmarshal(b, &st) != nil || st.Status != "waiting" || st.Position != tc.position {
				t.Fatalf("sleeper back: %d %s, want waiting at %d", res.StatusCode, b, tc.position)
			}
			// The slot frees: whoever is at the head is admitted next.
			s.do(t, "POST", "/admin/v1/shows/"+show+"/fans/next/revoke", "Bearer "+adminToken, "")
			first, second := "sleeper", "after"
			if tc.position != 1 {
				first, second = second, first
			}
			for end := time.Now().Add(5 * time.Second); poll(first).Status != "admitted"; time.Sleep(50 * time.Millisecond) {
				if time.Now().After(end) {
					t.Fatalf("%s was not admitted first", first)
				}
			}
			if st := poll(second); st.Status != "waiting" {
				t.Fatalf("%s: %+v, want still waiting", second, st)
			}
		})
	}
}
