package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	fsclient "github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/platformtest"
)

// TestConsoleQueueModeAndAutotuneInBrowser: an operator, in the console's Queue mode and autotune panel, switches
// a show to threshold mode (two active users), watches the figures count the fans who join and pass straight
// through, sees the queue engage when the second is admitted (the third waits in line), then switches autotune on
// and sees its change of the rate, with its reason, in the chart's description and in the table of changes. All
// through the real edge and booking (booking's health report in a namespace of the test's own); no route is
// stubbed and any console error fails.
func TestConsoleQueueModeAndAutotuneInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser")
	}
	t.Parallel()
	pulse := map[string]string{"PULSE_NAMESPACE": "pulse-e2e-" + uuid.NewString()}
	edgeEnv := map[string]string{"QUEUE_TICK": "100ms", "AUTOTUNE_EVERY": "300ms"}
	for k, v := range pulse {
		edgeEnv[k] = v
	}
	p := platformtest.Start(t, platformtest.Options{HoldTTL: 5 * time.Minute, MaxConns: 8, Booking: pulse, Edge: edgeEnv})
	c, err := fsclient.New(p.BaseURL, http.DefaultTransport, fsclient.Options{AdminToken: p.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	show := newShow(t, c, showSpec{title: "Nagamandala " + uuid.NewString()[:6], saleIn: -time.Minute})
	op, set, text := consoleOperator(t, p)
	fig := func(name string) string { return text(`#tune-figs [data-f="` + name + `"]`) }
	op.WaitFor("the show in the panel", `[...document.getElementById("tune-show").options].some((o) => o.value === "`+show+`")`)
	op.JS(`(() => { const s = document.getElementById("tune-show"); s.value = "` + show + `"; s.dispatchEvent(new Event("change")); })()`)
	op.WaitFor("the panel, queue off", `!document.getElementById("tune-panel").hidden && `+
		text("#tune-state")+`.startsWith("Mode off") && document.getElementById("tune-active").value !== ""`)
	for _, id := range []string{"tune-mode-off", "tune-mode-always", "tune-mode-threshold", "tune-active", "tune-arrivals",
		"tune-cooldown", "tune-auto", "tune-min", "tune-max", "tune-p99", "tune-down-closed", "tune-down-trickle",
		"tune-down-rate"} {
		if got := op.Text(`document.getElementById("` + id + `").labels[0]?.textContent ?? ""`); got == "" {
			t.Errorf("#%s has no label", id)
		}
	}
	if got := op.Text(`document.getElementById("tune-chart").getAttribute("aria-describedby")`); got != "tune-chart-desc" {
		t.Errorf("the chart is described by %q", got)
	}

	// Threshold mode: two active users engage the queue; arrivals never do; no cooldown.
	op.JS(`document.getElementById("tune-mode-threshold").click()`)
	set("#tune-active", "2")
	set("#tune-arrivals", "0")
	set("#tune-cooldown", "0")
	op.JS(`document.querySelector('#tune-form button[type="submit"]').click()`)
	op.WaitFor("saved", text("#tune-result")+`.startsWith("Saved")`)
	op.WaitFor("threshold, not engaged", text("#tune-state")+`.includes("not engaged") && `+fig("activeUsers")+` === "0 of 2"`)

	// Fans join: the first two pass straight through, and the second engages the queue.
	for i, want := range []string{"1 of 2", "2 of 2"} {
		g := guestFan(t, c)
		if q, res, err := c.Join(ctx, g.Token, show, ""); err != nil || q.Status != "admitted" {
			t.Fatalf("fan %d under the threshold: %+v %d %v", i+1, q, res.Status, err)
		}
		op.WaitFor("active users "+want, fig("activeUsers")+` === "`+want+`"`)
	}
	op.WaitFor("engaged", text("#tune-state")+`.includes("engaged now") && document.getElementById("tune-state").dataset.engaged === "true"`)
	if got := op.Text(text("#tune-announce")); !strings.Contains(got, "engaged now") {
		t.Errorf("the change was not announced: %q", got)
	}
	third := guestFan(t, c)
	if q, res, err := c.Join(ctx, third.Token, show, ""); err != nil || q.Status != "waiting" {
		t.Fatalf("the third fan with the queue engaged: %+v %d %v", q, res.Status, err)
	}
	if !strings.Contains(op.Text(fig("arrivalsPerMinute")), "(no threshold)") {
		t.Errorf("arrivals: %q", op.Text(fig("arrivalsPerMinute")))
	}

	// Autotune on, between 1 and 3 fans a second: booking's report (no slow holds) and the 24 seats move the rate.
	op.JS(`document.getElementById("tune-auto").click()`)
	set("#tune-min", "1")
	set("#tune-max", "3")
	set("#tune-p99", "500")
	op.JS(`document.querySelector('#tune-form button[type="submit"]').click()`)
	op.WaitFor("saved with autotune", text("#tune-result")+`.includes("autotune on")`)
	// Autotune acts first on the record (the API's view), then the console shows it: a failure says which half
	// did not happen. This test has timed out once on a loaded machine waiting for the figures, cause unknown.
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		q, err := c.Queue(ctx, show)
		if err != nil {
			t.Fatal(err)
		}
		if q.AutotuneReason != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("autotune did not set the rate in 90 s: the queue reads %v/s, autotune %+v, mode %q", q.AdmitPerSecond,
				q.Autotune, q.Mode)
		}
	}
	// The figures first (autotune acted), then the table (its audit entry was read): a failure says which.
	op.WaitFor("the rate set by autotune, in the figures", fig("rateNow")+`.includes("set by autotune") && `+
		`!`+fig("reason")+`.startsWith("none")`)
	op.WaitFor("autotune's change in the table", `[...document.querySelectorAll("#tune-changes tbody tr")].some((r) => `+
		`r.cells[2]?.textContent === "autotune" && r.cells[3].textContent.length > 10)`)
	op.WaitFor("and in the chart", `document.querySelectorAll("#tune-chart circle.dot title").length > 0 && `+
		text("#tune-chart-desc")+`.includes("by autotune; the last:")`)
	reason := op.Text(`[...document.querySelectorAll("#tune-changes tbody tr")].find((r) => r.cells[2].textContent === "autotune").cells[3].textContent`)
	q, err := c.Queue(ctx, show)
	if err != nil {
		t.Fatal(err)
	}
	op.WaitFor("the reason in force", fig("reason")+` !== "" && `+fig("rateNow")+`.includes("set by autotune")`)
	if q.AdmitPerSecond < 1 || q.AdmitPerSecond > 3 {
		t.Errorf("autotune set %v/s, outside [1, 3]", q.AdmitPerSecond)
	}
	t.Logf("autotune: %v/s, %q", q.AdmitPerSecond, reason)

	// What the queue does while its store is down: closed by default, then a trickle of 3 fans a second per replica.
	if op.Text(`String(document.getElementById("tune-down-closed").checked)`) != "true" {
		t.Error("the store-down policy is not shown as closed")
	}
	op.JS(`document.getElementById("tune-down-trickle").click()`)
	set("#tune-down-rate", "3")
	op.JS(`document.querySelector('#tune-form button[type="submit"]').click()`)
	op.WaitFor("saved with the trickle", text("#tune-result")+`.includes("trickle while its store is down")`)
	got, err := c.Queue(ctx, show)
	if err != nil {
		t.Fatal(err)
	}
	if d := got.WhenStoreDown; d == nil || d.Policy != "trickle" || d.AdmitPerSecond != 3 {
		t.Errorf("whenStoreDown after the form: %+v", got.WhenStoreDown)
	}
}
