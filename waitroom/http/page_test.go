package http_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

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
	t.Skip("chromium not installed (make tools)")
	return ""
}

// TestPageInBrowser drives the waiting-room page in headless Chromium: it gets a guest identity, joins behind
// five fans, shows a position that falls, and ends on the seat map with its admission token.
func TestPageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser")
	}
	exe := chromium(t)
	s := newServer(t, waitroom.Options{Tick: 50 * time.Millisecond}, func(app *fiber.App) {
		app.Post("/api/v1/auth/guest", func(c *fiber.Ctx) error {
			id := "guest-" + uuid.NewString()
			tok, _ := guestIssuer.Issue(id, time.Now(), time.Hour)
			return c.Status(201).JSON(fiber.Map{"userId": id, "token": tok})
		})
		app.Get("/shows/:id", func(c *fiber.Ctx) error {
			c.Set("Content-Type", "text/html")
			return c.SendString("<!doctype html><title>seats</title><h1 id=seats>seat map</h1>")
		})
	})
	show := s.show(t, 0.001, 100) // paused until the page shows its place
	for i := range 5 {
		s.join(t, show, "ahead"+strconv.Itoa(i))
	}

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
	ctx, cancelT := context.WithTimeout(ctx, 40*time.Second)
	defer cancelT()

	if _, err := chromedp.Run(ctx, chromedp.Navigate(s.base+"/queue/"+show)); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	var seen []int
	var href string
	resumed := false
	for ctx.Err() == nil {
		if len(seen) > 0 && !resumed {
			resumed = true
			s.do(t, "PUT", "/admin/v1/shows/"+show+"/queue", "Bearer "+adminToken, `{"admitPerSecond":3}`)
		}
		out, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.getElementById("position") ?
			document.getElementById("position").textContent : "") + "|" + location.href`))
		if err == nil {
			pos, loc, _ := strings.Cut(out, "|")
			if n, err := strconv.Atoi(strings.ReplaceAll(pos, ",", "")); err == nil &&
				(len(seen) == 0 || seen[len(seen)-1] != n) {
				seen = append(seen, n)
			}
			if strings.Contains(loc, "/shows/") {
				href = loc
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if href == "" {
		t.Fatalf("never redirected; positions seen %v", seen)
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
