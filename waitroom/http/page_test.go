package http_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
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

// pageRoutes stands in for booking: guest identities and the seat-map page the waiting room redirects to.
func pageRoutes(app *fiber.App) {
	app.Post("/api/v1/auth/guest", func(c *fiber.Ctx) error {
		id := "guest-" + uuid.NewString()
		tok, _ := guestIssuer.Issue(id, time.Now(), time.Hour)
		return c.Status(201).JSON(fiber.Map{"userId": id, "token": tok})
	})
	app.Get("/shows/:id", func(c *fiber.Ctx) error {
		c.Set("Content-Type", "text/html")
		return c.SendString("<!doctype html><title>seats</title><h1 id=seats>seat map</h1>")
	})
}

// browser starts headless Chromium with the flags the test suite uses everywhere.
func browser(t *testing.T) (context.Context, context.CancelFunc) {
	exe := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 40*time.Second)
	return ctx, func() { cancelT(); cancel(); cancelAlloc() }
}

// watchPage polls the page until it leaves for the seat map, calling see with the visible state each time.
func watchPage(ctx context.Context, see func(view, position string)) (string, error) {
	for ctx.Err() == nil {
		out, err := chromedp.Run(ctx, chromedp.Evaluate[string](`["waiting","opens","admitted","soldout","closed"].filter(
			function (id) { var e = document.getElementById(id); return e && !e.hidden; }).join(",") + "|" +
			(document.getElementById("position") ? document.getElementById("position").textContent : "") + "|" +
			(document.getElementById("countdown") ? document.getElementById("countdown").textContent : "") + "|" +
			location.href`))
		if err == nil {
			parts := strings.SplitN(out, "|", 4)
			if strings.Contains(parts[3], "/shows/") {
				return parts[3], nil
			}
			if parts[0] == "opens" {
				see("opens", parts[2])
			} else {
				see(parts[0], parts[1])
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "", ctx.Err()
}

// TestPageInBrowser drives the waiting-room page in headless Chromium: it gets a guest identity, joins behind
// five fans, shows a position that falls, and ends on the seat map with its admission token.
func TestPageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser")
	}
	ctx, stop := browser(t)
	defer stop()
	s := newServer(t, waitroom.Options{Tick: 50 * time.Millisecond}, pageRoutes)
	show := s.show(t, 0.001, 100) // paused until the page shows its place
	for i := range 5 {
		s.join(t, show, "ahead"+strconv.Itoa(i))
	}
	if _, err := chromedp.Run(ctx, chromedp.Navigate(s.base+"/queue/"+show)); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	var seen []int
	resumed := false
	href, err := watchPage(ctx, func(view, pos string) {
		n, err := strconv.Atoi(strings.ReplaceAll(pos, ",", ""))
		if view != "waiting" || err != nil || (len(seen) > 0 && seen[len(seen)-1] == n) {
			return
		}
		seen = append(seen, n)
		if !resumed {
			resumed = true
			s.do(t, "PUT", "/admin/v1/shows/"+show+"/queue", "Bearer "+adminToken, `{"admitPerSecond":1.5}`)
		}
	})
	if err != nil {
		t.Fatalf("never redirected (%v); positions seen %v", err, seen)
	}
	if !strings.Contains(href, "/shows/"+show+"?admission=ey") {
		t.Fatalf("redirected to %s, want the seat map with the admission token", href)
	}
	if len(seen) < 3 || seen[0] != 6 {
		t.Fatalf("positions shown %v, want a fall from 6", seen)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] >= seen[i-1] {
			t.Fatalf("positions shown %v did not fall", seen)
		}
	}
	t.Logf("positions shown: %v, then %s", seen, href[:strings.Index(href, "?")])
}

// TestPageBeforeOpening: a fan who opens the page before the sale sees a countdown, gets a drawn place at
// opening, and is admitted.
func TestPageBeforeOpening(t *testing.T) {
	if testing.Short() {
		t.Skip("browser")
	}
	ctx, stop := browser(t)
	defer stop()
	s := newServer(t, waitroom.Options{Tick: 50 * time.Millisecond}, pageRoutes)
	show := s.show(t, 4, 100)
	opens := time.Now().Add(4 * time.Second)
	s.rdb.HSet(context.Background(), rediskey.ShowInfo(show), rediskey.InfoSaleStartsAt, opens.UnixMilli())
	for i := range 3 {
		s.join(t, show, "early"+strconv.Itoa(i))
	}
	if _, err := chromedp.Run(ctx, chromedp.Navigate(s.base+"/queue/"+show)); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	var countdown, position bool
	href, err := watchPage(ctx, func(view, text string) {
		if view == "opens" && strings.HasPrefix(text, "Opens in") {
			countdown = true
		}
		if view == "waiting" && text != "" && text != "…" {
			position = true
		}
	})
	if err != nil || !strings.Contains(href, "?admission=") {
		t.Fatalf("never admitted: %v %s", err, href)
	}
	if !countdown || !position {
		t.Fatalf("countdown shown %v, position shown %v", countdown, position)
	}
	if time.Now().Before(opens) {
		t.Fatal("admitted before the sale opened")
	}
}

// TestPagePollingFallback: in a browser without EventSource the page polls status (Retry-After) and still
// ends on the seat map.
func TestPagePollingFallback(t *testing.T) {
	if testing.Short() {
		t.Skip("browser")
	}
	ctx, stop := browser(t)
	defer stop()
	s := newServer(t, waitroom.Options{Tick: 50 * time.Millisecond}, pageRoutes)
	show := s.show(t, 2, 100)
	for i := range 3 {
		s.join(t, show, "poll-ahead"+strconv.Itoa(i))
	}
	noEventSource := chromedp.Action[chromedp.Void](func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument,
			page.AddScriptToEvaluateOnNewDocumentParams{Source: "delete window.EventSource;"})
		return chromedp.Void{}, err
	})
	if _, err := chromedp.Run(ctx, noEventSource); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Navigate(s.base+"/queue/"+show)); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	streams, positions := 0, 0
	href, err := watchPage(ctx, func(view, pos string) {
		streams = max(streams, s.svc.Hub.Conns())
		if view == "waiting" && pos != "…" {
			positions++
		}
	})
	if err != nil || !strings.Contains(href, "/shows/"+show+"?admission=ey") {
		t.Fatalf("polling page never admitted: %v %s", err, href)
	}
	if streams != 0 || positions == 0 {
		t.Fatalf("streams seen %d, positions shown %d: want positions from polling alone", streams, positions)
	}
}
