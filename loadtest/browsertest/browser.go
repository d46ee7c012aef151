// Package browsertest drives Debian's headless Chromium for tests of pages: one browser per test, a tab per fan,
// and the checks every browser test wants (no console error, no failed load, no token in a URL). It knows nothing
// of the platform, so any package's tests can drive a page with it; loadtest/platformtest starts the platform
// such tests point it at.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Chromium finds Debian's Chromium (deploy/dev/tools.sh installs it for `make test`), or $CHROMIUM. It fails the
// test rather than skip: a skip would leave the pages untested unnoticed.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, p := range []string{os.Getenv("CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	t.Fatal("chromium not installed: run make tools (Debian package chromium) or set CHROMIUM")
	return ""
}

// Browser is one headless Chromium for a test's pages. Each Fan is a tab in a browser context of its own (its
// own cookies), in a phone-sized viewport, and the test fails when any of its pages writes a console error,
// throws, fails to load a page or script, or requests a URL that carries a token.
type Browser struct {
	t   testing.TB
	ctx context.Context
}

// New starts Chromium with the flags this machine needs, and extra ones a test adds (a fake camera: see
// FakeCamera); it stops when the test ends.
func New(t testing.TB, extra ...chromedp.ExecAllocatorOption) *Browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Chromium(t)), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()),
	}
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser, so fans can have browser contexts of their own
		t.Fatalf("start chromium: %v", err)
	}
	return &Browser{t: t, ctx: ctx}
}

// FakeCamera gives every page of the browser a camera whose picture is the video file at path (a .y4m or
// .mjpeg, read from the start when a page opens the camera), and lets the pages use it without asking.
func FakeCamera(path string) []chromedp.ExecAllocatorOption {
	return []chromedp.ExecAllocatorOption{chromedp.Flag("use-fake-device-for-media-stream", true),
		chromedp.Flag("use-fake-ui-for-media-stream", true), chromedp.Flag("use-file-for-fake-video-capture", path)}
}

// Fan is one person's tab.
type Fan struct {
	Name string
	Ctx  context.Context
	t    testing.TB

	close func()

	mu       sync.Mutex
	urls     []string
	problems []string
	missing  []string
}

// AllowMissing lets a page under prefix fail to load without failing the test: for a test that only checks a
// page leads there, while that page is not part of what it tests.
func (f *Fan) AllowMissing(prefix string) {
	f.mu.Lock()
	f.missing = append(f.missing, prefix)
	f.mu.Unlock()
}

func (f *Fan) allowed(url string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.missing {
		if i := strings.Index(url, "://"); i >= 0 {
			if j := strings.Index(url[i+3:], "/"); j >= 0 && strings.HasPrefix(url[i+3+j:], p) {
				return true
			}
		}
	}
	return false
}

// PhoneWidth and PhoneHeight are the viewport every fan's tab has: a common phone's CSS pixels.
const (
	PhoneWidth  = 390
	PhoneHeight = 844
)

// Fan opens a tab in a new browser context, in a phone-sized viewport, that gives up after timeout. It reports to
// the test that started the browser; a subtest uses FanFor.
func (b *Browser) Fan(name string, timeout time.Duration) *Fan {
	b.t.Helper()
	return b.FanFor(b.t, name, timeout)
}

// FanFor is Fan reporting to t (a subtest): the tab closes when t ends, and its failures are t's.
func (b *Browser) FanFor(t testing.TB, name string, timeout time.Duration) *Fan {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	ctx, cancelT := context.WithTimeout(ctx, timeout)
	f := &Fan{Name: name, Ctx: ctx, t: t}
	console := chromedp.Console(ctx)
	requests := chromedp.Events(ctx, network.RequestWillBeSent)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(PhoneWidth, PhoneHeight, chromedp.EmulateMobile)); err != nil {
		t.Fatalf("%s: viewport: %v", name, err)
	}
	f.OnNewDocument(streamRecorder)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for m, err := range console {
			if err != nil {
				return
			}
			if bad(m) && !f.allowed(m.URL) {
				f.mu.Lock()
				f.problems = append(f.problems, m.String()+" ("+m.URL+")")
				f.mu.Unlock()
			}
		}
	}()
	go func() {
		defer wg.Done()
		for ev, err := range requests {
			if err != nil {
				return
			}
			f.mu.Lock()
			f.urls = append(f.urls, ev.Request.URL)
			if ev.DocumentURL != "" {
				f.urls = append(f.urls, ev.DocumentURL)
			}
			f.mu.Unlock()
		}
	}()
	f.close = sync.OnceFunc(func() {
		cancelT()
		cancel()
		wg.Wait()
		for _, p := range f.Problems() {
			t.Errorf("%s: console: %s", name, p)
		}
		for _, u := range f.URLs() {
			if TokenInURL(u) {
				t.Errorf("%s: a token in a URL: %s", name, u)
			}
		}
	})
	t.Cleanup(f.close)
	return f
}

// Close closes the fan's tab and browser context now, rather than when its test ends, and reports its console
// problems and token URLs as the end of the test would: for a test or benchmark that opens many fans one after
// another.
func (f *Fan) Close() { f.close() }

// bad tells the console messages that fail a test: errors and uncaught exceptions, and the browser's own error
// entries except an API call's refusal (a 401 before signing in, a 409 for a taken seat, a 402 for a declined
// card): pages handle those, while a page or script that fails to load is a fault.
func bad(m chromedp.ConsoleMessage) bool {
	switch {
	case m.IsException():
		return true
	case m.Type != chromedp.ConsoleError:
		return false
	case m.Source == "network" && apiCall.MatchString(m.URL):
		return false
	}
	return true
}

// apiCall matches the API's addresses (booking's, the waiting room's and the operator console's: a wrong operator
// token is a 401 the console page shows), as opposed to pages and assets.
var apiCall = regexp.MustCompile(`^https?://[^/]+/(api/v1/|queue/[^/?]+/(join|status|events)|admin/(session|live|figures|v1/))`)

var jwtLike = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.`)

// TokenInURL reports whether a URL carries something that looks like a token: a JWT anywhere, or a query
// parameter named for one.
func TokenInURL(u string) bool {
	if jwtLike.MatchString(u) {
		return true
	}
	l := strings.ToLower(u)
	for _, p := range []string{"admission=", "access_token=", "token=", "session="} {
		if strings.Contains(l, "?"+p) || strings.Contains(l, "&"+p) {
			return true
		}
	}
	return false
}

// streamRecorder keeps every EventSource a page opens in window.__streams, so that CutStreams can close them: how a
// test makes a fan's live updates lag, as a slow network would, to stage two fans clicking the same seat at once.
const streamRecorder = `(() => {
  const ES = window.EventSource;
  if (!ES) return;
  window.__streams = [];
  // A subclass, so that the page still finds EventSource.CONNECTING, OPEN and CLOSED.
  window.EventSource = class extends ES { constructor(url, opts) { super(url, opts); window.__streams.push(this); } };
})();`

// OnNewDocument runs script in every page the fan opens from now on, before the page's own scripts.
func (f *Fan) OnNewDocument(script string) {
	f.t.Helper()
	if err := chromedp.Do(f.Ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument,
			page.AddScriptToEvaluateOnNewDocumentParams{Source: script})
		return err
	})); err != nil {
		f.t.Fatalf("%s: add a script: %v", f.Name, err)
	}
}

// Languages sets the languages the fan's browser prefers, most preferred first ("hi-IN", "hi"), as a phone set to
// them would: its Accept-Language header and navigator.language(s) say them from the next page on. They are bare
// tags: Chromium adds the q-values itself, after any a tag carries ("hi;q=0.9" goes out as "hi;q=0.9;q=0.9", a
// header no browser sends).
func (f *Fan) Languages(langs ...string) {
	f.t.Helper()
	for _, l := range langs {
		if strings.ContainsAny(l, ";,") {
			f.t.Fatalf("%s: languages: %q: give bare tags, most preferred first; Chromium adds the q-values", f.Name, l)
		}
	}
	v, err := chromedp.CallBrowser(f.Ctx, browser.GetVersion, cdp.Empty{})
	if err == nil {
		_, err = chromedp.Call(f.Ctx, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{
			UserAgent: v.UserAgent, AcceptLanguage: strings.Join(langs, ",")})
	}
	if err != nil {
		f.t.Fatalf("%s: languages: %v", f.Name, err)
	}
}

// Grant gives the fan's pages a permission ("notifications"), as the fan clicking Allow would.
func (f *Fan) Grant(permission string) {
	f.t.Helper()
	id := chromedp.FromContext(f.Ctx).BrowserContextID
	if _, err := chromedp.CallBrowser(f.Ctx, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: permission}, Setting: browser.PermissionSettingGranted,
		BrowserContextID: id}); err != nil {
		f.t.Fatalf("%s: grant %s: %v", f.Name, permission, err)
	}
}

// Cookie is the value of the fan's cookie of that name for the page's URL, HttpOnly ones included, as the
// browser would send it; "" when there is none.
func (f *Fan) Cookie(name string) string {
	f.t.Helper()
	res, err := chromedp.Call(f.Ctx, network.GetCookies, network.GetCookiesParams{})
	if err != nil {
		f.t.Fatalf("%s: cookies: %v", f.Name, err)
	}
	for _, c := range res.Cookies {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// CutStreams closes the event streams the current page has open: its live view goes stale until reloaded.
func (f *Fan) CutStreams() {
	f.t.Helper()
	f.JS(`(window.__streams || []).forEach((s) => s.close())`)
}

// FailRequests makes every request of the fan's pages whose URL matches pattern (a glob: "*/seats/stream") fail
// at the network, as a proxy or a network that refuses the connection would: the page meets a real failure, not
// an answer the test made up.
func (f *Fan) FailRequests(pattern string) {
	f.t.Helper()
	f.intercept(pattern, func(id fetch.RequestID) {
		_, _ = chromedp.Call(f.Ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: id,
			ErrorReason: network.ErrorReasonConnectionRefused})
	})
}

// HoldRequests leaves every request whose URL matches pattern unanswered, as a proxy that buffers an event
// stream's answer would: the request neither completes nor fails.
func (f *Fan) HoldRequests(pattern string) {
	f.t.Helper()
	f.intercept(pattern, func(fetch.RequestID) {})
}

// LoseAnswers lets the first n requests whose URL matches pattern reach the platform, which acts on them, and
// drops its answers on the way back (the connection reset), as a signal lost mid-request does; later requests
// pass untouched. The page must find out what became of a request it never heard back from.
func (f *Fan) LoseAnswers(pattern string, n int) {
	f.t.Helper()
	var lost atomic.Int32
	f.interceptAt(pattern, fetch.RequestStageResponse, func(id fetch.RequestID) {
		if int(lost.Add(1)) <= n {
			_, _ = chromedp.Call(f.Ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: id,
				ErrorReason: network.ErrorReasonConnectionReset})
			return
		}
		_, _ = chromedp.Call(f.Ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: id})
	})
}

// intercept pauses the fan's requests matching pattern and hands each to do, which must answer or leave it.
func (f *Fan) intercept(pattern string, do func(fetch.RequestID)) {
	f.t.Helper()
	f.interceptAt(pattern, fetch.RequestStageRequest, do)
}

// interceptAt is intercept at stage: before the request is sent, or once its answer has come back.
func (f *Fan) interceptAt(pattern string, stage fetch.RequestStage, do func(fetch.RequestID)) {
	f.t.Helper()
	paused := chromedp.Events(f.Ctx, fetch.RequestPaused)
	if _, err := chromedp.Call(f.Ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: pattern, RequestStage: stage}}}); err != nil {
		f.t.Fatalf("%s: intercept %s: %v", f.Name, pattern, err)
	}
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			do(ev.RequestID)
		}
	}()
}

// URLs are the URLs the fan's pages have requested so far, redirects included.
func (f *Fan) URLs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.urls...)
}

// Problems are the console messages that fail the test, so far.
func (f *Fan) Problems() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.problems...)
}

// Go navigates to url.
func (f *Fan) Go(url string) {
	f.t.Helper()
	if err := chromedp.Do(f.Ctx, chromedp.Navigate(url)); err != nil {
		f.t.Fatalf("%s: navigate %s: %v", f.Name, url, err)
	}
}

// JS runs a statement in the page.
func (f *Fan) JS(expr string) {
	f.t.Helper()
	if _, err := chromedp.Run(f.Ctx, chromedp.Evaluate[any](expr)); err != nil {
		f.t.Fatalf("%s: %s: %v", f.Name, expr, err)
	}
}

// Text evaluates a string expression; "" when the page cannot answer (between two documents).
func (f *Fan) Text(expr string) string {
	s, _ := chromedp.Run(f.Ctx, chromedp.Evaluate[string](expr))
	return s
}

// Await evaluates an expression whose value is a promise of a string, and waits for it.
func (f *Fan) Await(expr string) string {
	f.t.Helper()
	s, err := chromedp.Run(f.Ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		f.t.Fatalf("%s: %s: %v", f.Name, expr, err)
	}
	return s
}

// WaitFor polls a JavaScript condition until it holds; on timeout it fails the test with what the page shows.
func (f *Fan) WaitFor(what, cond string) {
	f.t.Helper()
	for f.Ctx.Err() == nil {
		if ok, err := chromedp.Run(f.Ctx, chromedp.Evaluate[bool](cond)); err == nil && ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.t.Fatalf("%s: %s: timed out; problems %v; last URLs %v", f.Name, what, f.Problems(), last(f.URLs(), 5))
}

// Path is the page's location.pathname.
func (f *Fan) Path() string { return f.Text(`location.pathname`) }

func last(l []string, n int) []string {
	if len(l) > n {
		return l[len(l)-n:]
	}
	return l
}
