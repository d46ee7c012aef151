package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/flashseat/flashseat/loadtest/browsertest"
	fsclient "github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/platformtest"
	"github.com/flashseat/flashseat/shared/session"
	"github.com/flashseat/flashseat/waitroom/siteverify/siteverifytest"
)

// The queue page against the waiting room's bot protection, in a real browser through the real edge and booking:
// the page earns its place (a proof of work solved in a Web Worker, the human check when the show asks for it),
// says in words why a place is refused, and keeps a phone's place while the phone sleeps.

// botPlatform is a platform whose edge has a human check (siteverifytest's stand-in for Turnstile), trusts
// X-Forwarded-For from loopback as from a CDN (so a fan can come from an address of its own: from loopback itself
// each identity is its own prefix) and skips a silent fan after 3 s rather than 30, so a test can sleep a phone
// through its turn.
func botPlatform(t *testing.T) (*platformtest.Platform, *fsclient.Client, *siteverifytest.Server) {
	t.Helper()
	hc := siteverifytest.New(t)
	p := platformtest.Start(t, platformtest.Options{HoldTTL: 5 * time.Minute, MaxConns: 8, Edge: map[string]string{
		"QUEUE_TICK": "100ms", "QUEUE_HEARTBEAT_GRACE": "3s", "QUEUE_HEARTBEAT_FLUSH": "1s", "TRUSTED_PROXIES": "127.0.0.0/8",
		"HUMAN_CHECK": "turnstile", "HUMAN_CHECK_SITE_KEY": siteverifytest.SiteKey,
		"HUMAN_CHECK_SECRET": siteverifytest.Secret, "HUMAN_CHECK_VERIFY_URL": hc.VerifyURL(),
		"HUMAN_CHECK_SCRIPT_URL": hc.ScriptURL()}})
	c, err := fsclient.New(p.BaseURL, http.DefaultTransport, fsclient.Options{AdminToken: p.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	return p, c, hc
}

// admin sends an operator's request and decodes its JSON answer into out (nil: none).
func admin(t testing.TB, p *platformtest.Platform, method, path, body string, out any) {
	t.Helper()
	req, _ := http.NewRequest(method, p.BaseURL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+p.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %s %s", method, path, res.Status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

// queueFigures are the operator's counts of a show's queue and its bot protection.
type queueFigures struct {
	Skipped         int64 `json:"skippedTotal"`
	TurnHoldSeconds int   `json:"turnHoldSeconds"`
	Bot             struct {
		BaseDifficulty int64 `json:"baseDifficulty"`
	} `json:"botProtection"`
}

type botFigures struct {
	Issued  int64            `json:"challengesIssued"`
	Solved  int64            `json:"challengesSolved"`
	Refused map[string]int64 `json:"refusedByReason"`
}

// TestQueuePageBotProtection: every way the guard answers the page, as a fan sees it.
func TestQueuePageBotProtection(t *testing.T) {
	if testing.Short() {
		t.Skip("browser")
	}
	t.Parallel()
	p, c, hc := botPlatform(t)
	br := browsertest.New(t)
	queuePage := func(show string) string { return p.BaseURL + "/queue/" + show }

	t.Run("the human check, then the seats", func(t *testing.T) {
		show := newShow(t, c, showSpec{title: "Verified", saleIn: -time.Minute, queue: true, admitRate: 2})
		admin(t, p, "PUT", "/admin/v1/shows/"+show+"/queue", `{"botProtection":{"humanCheck":true}}`, nil)
		res, err := http.Get(queuePage(show))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		origin := strings.TrimSuffix(hc.ScriptURL(), "/api.js")
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self' https://challenges.cloudflare.com "+origin+";") ||
			!strings.Contains(csp, "connect-src 'self' "+origin+";") {
			t.Errorf("the page's policy does not let the widget in: %s", csp)
		}
		waitGate(t, p.BaseURL, show)
		fan := br.FanFor(t, "fan", 4*time.Minute)
		fan.Go(queuePage(show))
		widget := `document.querySelector("#human-widget .cf-turnstile button")`
		fan.WaitFor("the human check", `!document.getElementById("human").hidden && `+widget+` !== null`)
		if got := fan.Text(widget + `.textContent`); got != "I am human" {
			t.Errorf("the widget's button says %q", got)
		}
		// The proof is solved meanwhile; the join waits for the fan.
		time.Sleep(time.Second)
		for _, u := range fan.URLs() {
			if strings.HasSuffix(u, "/join") {
				t.Fatalf("the page joined before the human check: %s", u)
			}
		}
		fan.JS(widget + `.click()`)
		fan.WaitFor("the seats", `location.pathname === "/shows/`+show+`"`)
		reqs := hc.Requests()
		if len(reqs) != 1 || !strings.HasPrefix(reqs[0].Response, "siteverifytest.") || reqs[0].RemoteIP != "127.0.0.1" {
			t.Errorf("verifications: %+v, want the widget's one token from 127.0.0.1", reqs)
		}
		var f botFigures
		admin(t, p, "GET", "/admin/v1/shows/"+show+"/bots", "", &f)
		if f.Solved != 1 {
			t.Errorf("bot figures %+v, want the fan's one proof solved", f)
		}
	})

	t.Run("accounts only: told to sign in", func(t *testing.T) {
		show := newShow(t, c, showSpec{title: "Members", saleIn: -time.Minute, queue: true})
		admin(t, p, "PUT", "/admin/v1/shows/"+show+"/queue", `{"botProtection":{"accountsOnly":true}}`, nil)
		fan := br.FanFor(t, "guest", 3*time.Minute)
		toldInWords(t, fan, queuePage(show), "Sign in to your account")
	})

	t.Run("a blocked network: told so", func(t *testing.T) {
		show := newShow(t, c, showSpec{title: "Blocked", saleIn: -time.Minute, queue: true})
		addr := fmt.Sprintf("198.18.%d.%d", rand.IntN(256), 1+rand.IntN(254))
		admin(t, p, "POST", "/admin/v1/shows/"+show+"/blocked-prefixes", `{"prefix":"`+addr+`"}`, nil)
		fan := br.FanFor(t, "fan on a blocked network", 3*time.Minute)
		if _, err := chromedp.Call(fan.Ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{
			Headers: network.Headers{"X-Forwarded-For": addr}}); err != nil {
			t.Fatal(err)
		}
		toldInWords(t, fan, queuePage(show), "Your network may not join this queue")
	})

	t.Run("a second identity in the same browser: told so", func(t *testing.T) {
		show := newShow(t, c, showSpec{title: "One each", saleIn: -time.Minute, queue: true})
		pauseQueue(t, p, show, true)
		fan := br.FanFor(t, "fan with two identities", 3*time.Minute)
		fan.Go(queuePage(show))
		fan.WaitFor("a place", `!document.getElementById("paused").hidden`)
		// The session cookie goes (signed out, a cleared jar of one site); the browser's place stays with the
		// browser, so the page's new guest is refused a second one.
		if _, err := chromedp.Call(fan.Ctx, network.DeleteCookies, network.DeleteCookiesParams{Name: session.Cookie,
			URL: p.BaseURL}); err != nil {
			t.Fatal(err)
		}
		toldInWords(t, fan, queuePage(show), "already has a place in this queue under another sign-in")
	})

	// A phone locks while its fan waits: the system drops the page's connection and freezes the page. Their turn
	// comes and goes; the page thaws within the show's turn hold, asks for its place at once, and the fan goes in.
	t.Run("a phone asleep through its turn gets in when it wakes", func(t *testing.T) {
		show := newShow(t, c, showSpec{title: "Night bus", saleIn: -time.Minute, queue: true, admitRate: 1})
		pauseQueue(t, p, show, true)
		fan := br.FanFor(t, "fan on a phone", 4*time.Minute)
		fan.Grant("notifications")
		fan.OnNewDocument(notificationBodyRecorder)
		fan.Go(queuePage(show))
		fan.WaitFor("paused, with a place", `!document.getElementById("paused").hidden`)
		if got := fan.Text(`document.getElementById("hold").textContent`); !strings.Contains(got, "your turn is held for 10 minutes") ||
			strings.Contains(got, "background tab is fine") {
			t.Errorf("what the page says of a locked phone: %q", got)
		}
		fan.CutStreams()
		lifecycle(t, fan, page.SetWebLifecycleStateStateFrozen)
		// The waiting room counts the fan gone 3 s (the grace) after its last heartbeat, which its stream kept
		// sending until the edge found the connection closed, at the stream's next write or two (every 2 s).
		time.Sleep(10 * time.Second)
		pauseQueue(t, p, show, false)
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			var q queueFigures
			admin(t, p, "GET", "/admin/v1/shows/"+show+"/queue", "", &q)
			if q.Skipped >= 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the sleeping fan's turn never came")
			}
		}
		woke := time.Now()
		lifecycle(t, fan, page.SetWebLifecycleStateStateActive)
		fan.WaitFor("the seats", `location.pathname === "/shows/`+show+`"`)
		// At once, not at the page's next look at a silent stream (25 s while paused).
		if took := time.Since(woke); took > 6*time.Second {
			t.Errorf("the woken page took %v to get its fan in", took)
		}
		// The notification says how long the fan has to choose: the admission's 600 s, a second or two gone.
		note := fan.Text(`sessionStorage.getItem("fs_test_note") || ""`)
		if !regexp.MustCompile(`^It's your turn\|Choose your seats for Night bus within (9|10) minutes\.$`).MatchString(note) {
			t.Errorf("notification: %q", note)
		}
	})
}

// notificationBodyRecorder keeps the title and body of the page's notification in sessionStorage, as
// notificationRecorder keeps its title.
const notificationBodyRecorder = `(() => {
  const N = window.Notification;
  if (!N) return;
  const R = function (title, opts) {
    sessionStorage.setItem("fs_test_note", title + "|" + ((opts && opts.body) || ""));
    return new N(title, opts);
  };
  Object.defineProperty(R, "permission", { get: () => N.permission });
  R.requestPermission = (...a) => N.requestPermission(...a);
  window.Notification = R;
})();`

// lifecycle moves the fan's page to a Page Lifecycle state, as a phone's system does to a background tab.
func lifecycle(t *testing.T, fan *browsertest.Fan, state page.SetWebLifecycleStateState) {
	t.Helper()
	if _, err := chromedp.Call(fan.Ctx, page.SetWebLifecycleState, page.SetWebLifecycleStateParams{State: state}); err != nil {
		t.Fatalf("%s: %s: %v", fan.Name, state, err)
	}
}

// toldInWords opens the queue page at url and waits for its alert to say want; whatever else the page says, it
// says in words, not JSON.
func toldInWords(t *testing.T, fan *browsertest.Fan, url, want string) {
	t.Helper()
	fan.Go(url)
	fan.WaitFor("the alert", `!document.getElementById("error").hidden && `+
		`document.getElementById("error").textContent.includes(`+strconv.Quote(want)+`)`)
	if got := fan.Text(`document.body.innerText`); strings.Contains(got, `{"`) || strings.Contains(got, "problem") {
		t.Errorf("the page shows raw JSON: %q", got)
	}
}

// BenchmarkPhoneJoin: how long a fan on a phone-class CPU waits for a place, through the real page, edge and
// booking with the show's bot protection at its base difficulty: from the page's navigation to the join's 200
// "waiting" (guest sign-in, the challenge, the proof solved in the page's Web Worker, the join). Every fan is a
// fresh browser context with an identity of its own (loopback is RATE_EXEMPT, so each identity is its own prefix
// and pays the base difficulty). Each iteration is one fan on a phone and one unthrottled, the baseline.
//
// The phone: Chromium's DevTools CPU throttling at 4x (a mid-tier phone) slows the page's own thread, but not its
// Web Worker: Chromium refuses Emulation.setCPUThrottlingRate on worker targets, and the worker hashes as fast
// throttled as not (khash/s-1x and khash/s-devtools-4x show it). So a phone fan's time is the throttled page's,
// plus three more times the solver's own (the page's "queue-solve" measure): the worker at a quarter of the speed.
//
// It reports the phone's median and p95 (ms-median-4x, ms-p95-4x) and its solver's median share
// (ms-solve-median-4x), the baseline's median (ms-median-1x) and the ratio (x-phone), the difficulty, and the
// worker's hash rate, 1,000 hashes a second. Twenty fans of each:
//
//	go test -run '^$' -bench BenchmarkPhoneJoin -benchtime 20x ./edge/e2e/
func BenchmarkPhoneJoin(b *testing.B) {
	p := platformtest.Start(b, platformtest.Options{MaxConns: 8, Edge: map[string]string{"QUEUE_TICK": "100ms"}})
	c, err := fsclient.New(p.BaseURL, http.DefaultTransport, fsclient.Options{AdminToken: p.AdminToken})
	if err != nil {
		b.Fatal(err)
	}
	show := newShow(b, c, showSpec{title: "Phones", saleIn: -time.Minute, queue: true, admitRate: 0.001})
	var q queueFigures
	admin(b, p, "GET", "/admin/v1/shows/"+show+"/queue", "", &q)
	br := browsertest.New(b)
	url := p.BaseURL + "/queue/" + show

	// The worker's hash rate, in a page of the show, unthrottled and under DevTools' 4x.
	rates := map[float64]float64{}
	for _, x := range []float64{1, 4} {
		fan := br.FanFor(b, fmt.Sprintf("hash rate at %gx", x), 2*time.Minute)
		throttle(b, fan, x)
		fan.Go(url)
		fan.WaitFor("a place", `performance.getEntriesByName("queue-joined").length > 0`)
		rates[x] = hashRate(b, fan, 1_000_000)
		fan.Close()
	}

	var phone, solve, desk []float64
	b.ResetTimer()
	for i := range b.N {
		for _, x := range []float64{4, 1} {
			fan := br.FanFor(b, fmt.Sprintf("fan %d at %gx", i, x), time.Minute)
			throttle(b, fan, x)
			fan.Go(url)
			fan.WaitFor("a place", `performance.getEntriesByName("queue-joined").length > 0`)
			var got struct{ Joined, Solve float64 }
			if err := json.Unmarshal([]byte(fan.Text(`JSON.stringify({
			  joined: performance.getEntriesByName("queue-joined")[0].startTime,
			  solve: performance.getEntriesByName("queue-solve").reduce((s, m) => s + m.duration, 0) })`)), &got); err != nil {
				b.Fatal(err)
			}
			if x == 4 {
				phone = append(phone, got.Joined+(x-1)*got.Solve)
				solve = append(solve, x*got.Solve)
			} else {
				desk = append(desk, got.Joined)
			}
			fan.Close()
		}
	}
	b.StopTimer()
	var f botFigures
	admin(b, p, "GET", "/admin/v1/shows/"+show+"/bots", "", &f)
	if want := int64(2*b.N + 2); f.Solved != want {
		b.Errorf("bot figures %+v: want %d places bought with a proof", f, want)
	}
	b.ReportMetric(quantile(phone, 0.5), "ms-median-4x")
	b.ReportMetric(quantile(phone, 0.95), "ms-p95-4x")
	b.ReportMetric(quantile(solve, 0.5), "ms-solve-median-4x")
	b.ReportMetric(quantile(desk, 0.5), "ms-median-1x")
	b.ReportMetric(quantile(phone, 0.5)/quantile(desk, 0.5), "x-phone")
	b.ReportMetric(float64(q.Bot.BaseDifficulty), "difficulty")
	b.ReportMetric(rates[1]/1000, "khash/s-1x")
	b.ReportMetric(rates[4]/1000, "khash/s-devtools-4x")
	b.ReportMetric(0, "ns/op") // a fan's wait is the measure, not the loop's
}

// throttle slows the fan's page x times, as DevTools' CPU throttling does (its thread, not its workers').
func throttle(b testing.TB, fan *browsertest.Fan, x float64) {
	b.Helper()
	if x == 1 {
		return
	}
	if _, err := chromedp.Call(fan.Ctx, emulation.SetCPUThrottlingRate, emulation.SetCPUThrottlingRateParams{Rate: x}); err != nil {
		b.Fatalf("%s: throttle: %v", fan.Name, err)
	}
}

// hashRate runs the page's worker on a challenge whose number is n, and returns the hashes it tried a second.
func hashRate(b testing.TB, fan *browsertest.Fan, n int64) float64 {
	b.Helper()
	// A salt as long as the waiting room's (its terms ride in it), so each try hashes the same tail.
	salt := strings.Repeat("0123456789abcdef", 6) + "?d=100000&expires=1764158400&iat=1764158100000&scope=show%3Ax&"
	sum := sha256.Sum256([]byte(salt + strconv.FormatInt(n, 10)))
	got := fan.Await(`new Promise((resolve) => {
	  const w = new Worker(document.querySelector("script[data-worker]").dataset.worker);
	  const t0 = performance.now();
	  w.onmessage = (e) => { w.terminate(); resolve(JSON.stringify({ number: e.data.number, ms: performance.now() - t0 })); };
	  w.postMessage({ algorithm: "SHA-256", challenge: "` + hex.EncodeToString(sum[:]) + `", maxnumber: ` +
		strconv.FormatInt(n, 10) + `, salt: "` + salt + `" });
	})`)
	var r struct {
		Number int64   `json:"number"`
		MS     float64 `json:"ms"`
	}
	if err := json.Unmarshal([]byte(got), &r); err != nil || r.Number != n || r.MS <= 0 {
		b.Fatalf("%s: the worker answered %s", fan.Name, got)
	}
	return float64(n+1) / (r.MS / 1000)
}

// quantile is the q-quantile of ms (nearest rank).
func quantile(ms []float64, q float64) float64 {
	if len(ms) == 0 {
		return 0
	}
	s := slices.Clone(ms)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
