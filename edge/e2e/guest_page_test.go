package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/flashseat/flashseat/loadtest/browsertest"
	fsclient "github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/platformtest"
	"github.com/flashseat/flashseat/shared/infra/redistest"
)

// TestGuestSessionWithProofInBrowser: a fan whose network has started many guest sessions lately (here every
// session needs one: GUEST_FREE=0, every address counted) still gets one on booking's pages: the page solves the
// guest challenge in the waiting room's worker and signs in, then uses the seat map like anyone else.
func TestGuestSessionWithProofInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser")
	}
	t.Parallel()
	p := platformtest.Start(t, platformtest.Options{HoldTTL: 5 * time.Minute, MaxConns: 8,
		Edge: map[string]string{"RATE_EXEMPT": "none", "GUEST_FREE": "0", "GUEST_LIMIT": "1000000", "QUEUE_TICK": "100ms"}})
	c, err := fsclient.New(p.BaseURL, http.DefaultTransport, fsclient.Options{AdminToken: p.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	// The guest counts are not a show's keys: this test's address's count goes when it ends.
	rdb := redistest.New(t).Client
	t.Cleanup(func() { rdb.HDel(context.Background(), "{guest}:pressure", "127.0.0.1") })
	show := newShow(t, c, showSpec{title: "Busy network", saleIn: -time.Minute})
	br := browsertest.New(t)
	fan := br.FanFor(t, "fan behind a busy network", 3*time.Minute)
	fan.Go(p.BaseURL + "/shows/" + show)
	fan.WaitFor("the seat map", seat("A1")+` !== null`)
	fan.JS(seat("A1") + `.click()`)
	fan.WaitFor("selected", seat("A1")+`.getAttribute("aria-pressed") === "true"`)
	fan.JS(`document.getElementById("hold").click()`)
	fan.WaitFor("the checkout", `location.pathname.startsWith("/checkout/")`)
	if got := fan.Await(`fetch("/api/v1/me").then((r) => String(r.status))`); got != "200" {
		t.Fatalf("the page did not sign the fan in: /api/v1/me answers %s; problems %v", got, fan.Problems())
	}
}
