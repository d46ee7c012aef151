package http_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium finds Debian's Chromium (deploy/dev/tools.sh installs it for `make test`).
func chromium(t *testing.T) string {
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
	// A skip here would let the page go untested unnoticed; make test installs Chromium (deploy/dev/tools.sh).
	t.Fatal("chromium not installed: run make tools (Debian package chromium) or set CHROMIUM")
	return ""
}

// TestSeatMapPageInBrowser drives the seat-map page in headless Chromium: it renders the 200 seats, shows a
// rival's hold live from the seat stream, holds two seats, and is turned away with alternatives for a taken one.
func TestSeatMapPageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser")
	}
	exe := chromium(t)
	h := newHarness(t, newEnv(t))
	show := h.env.Show.ID
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	defer cancelT()

	// waitFor polls a JavaScript condition until it holds.
	waitFor := func(what, cond string) {
		t.Helper()
		for ctx.Err() == nil {
			if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](cond)); err == nil && ok {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		msg, _ := chromedp.Run(context.Background(), chromedp.Evaluate[string](`document.getElementById("msg").textContent`))
		t.Fatalf("%s: timed out (message %q)", what, msg)
	}
	js := func(expr string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](expr)); err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
	}
	seat := func(id string) string { return `document.querySelector('#map button[data-seat="` + id + `"]')` }
	msg := func() string {
		m, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("msg").textContent`))
		return m
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(h.base+"/shows/"+show)); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	waitFor("seat map", seat("J20")+` !== null && document.getElementById("live").textContent.includes("live")`)
	// A rival holds E5 and E6: the page learns it from the stream.
	if r := h.do("POST", "/api/v1/bookings/hold", h.user("rival"), holdBody(show, "E5", "E6")); r.status != 201 {
		t.Fatalf("rival hold: %d %s", r.status, r.body)
	}
	waitFor("stream update", seat("E6")+`.classList.contains("HELD")`)
	// Select and hold F7, F8, then cancel.
	js(seat("F7") + `.click(); ` + seat("F8") + `.click(); document.getElementById("hold").click()`)
	waitFor("hold", `document.getElementById("msg").textContent.startsWith("Held")`)
	if m := msg(); !strings.Contains(m, "F7") || !strings.Contains(m, "F8") {
		t.Fatalf("message %q", m)
	}
	js(`document.getElementById("cancel").click()`)
	waitFor("cancel", `document.getElementById("msg").textContent.includes("cancelled")`)
	// A rival takes G2 just before the fan asks for G1 and G2: the page offers alternatives.
	if r := h.do("POST", "/api/v1/bookings/hold", h.user("rival2"), holdBody(show, "G2")); r.status != 201 {
		t.Fatalf("rival hold: %d %s", r.status, r.body)
	}
	js(`hold(["G1", "G2"])`)
	waitFor("conflict", `document.getElementById("msg").textContent.includes("Suggested") && !document.getElementById("holdAlt").hidden`)
	if m := msg(); !strings.Contains(m, "Taken: G2") {
		t.Fatalf("message %q", m)
	}
}
