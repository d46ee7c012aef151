package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/flashseat/flashseat/loadtest/browsertest"
	fsclient "github.com/flashseat/flashseat/loadtest/client"
)

// TestOperatorConsoleInBrowser: an operator runs a sale from the console in a real browser, through the real edge
// and booking (no route stubbed; any console error fails the test): a wrong token is refused, then they sign in,
// switch the show's queue on (a hold without admission is then refused by the public API), watch the waiting
// figure rise as fans join, pause and resume admission, look up an admitted fan and kick them (their next hold
// gets 403), and sign out.
func TestOperatorConsoleInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser")
	}
	t.Parallel()
	p, c := journeyPlatform(t)
	ctx := context.Background()
	title := "Hayavadana " + uuid.NewString()[:6]
	show := newShow(t, c, showSpec{title: title, saleIn: -time.Minute})
	op := browsertest.New(t).Fan("operator", 6*time.Minute)
	card := `document.querySelector('article[data-show="` + show + `"]')`
	fig := func(name string) string { return card + `.querySelector('[data-f="` + name + `"]').textContent` }
	set := func(sel, v string) {
		op.JS(`(() => { const e = document.querySelector(` + strconv.Quote(sel) + `); e.value = ` + strconv.Quote(v) +
			`; e.dispatchEvent(new Event("input")); })()`)
	}

	// A wrong token: 401, said on the page, no session.
	op.Go(p.BaseURL + "/admin")
	op.WaitFor("the sign-in form", `!document.getElementById("signin").hidden && document.getElementById("app").hidden`)
	set("#token", "not-the-token")
	op.JS(`document.querySelector('#signin-form button[type="submit"]').click()`)
	op.WaitFor("the refusal", `document.getElementById("signin-error").textContent.includes("refused")`)
	if got := op.Await(`fetch("/admin/session").then((r) => String(r.status))`); got != "401" {
		t.Fatalf("session after a wrong token: %s", got)
	}

	// The right one: the console, with the show and its figures in words.
	set("#token", p.AdminToken)
	set("#opname", "Asha")
	op.JS(`document.querySelector('#signin-form button[type="submit"]').click()`)
	op.WaitFor("the console", `!document.getElementById("app").hidden && `+card+` !== null`)
	op.WaitFor("the figures", fig("waiting")+` === "0 waiting" && `+fig("available")+`.includes("available")`)
	if got := op.Text(`document.getElementById("operator").textContent`); !strings.Contains(got, "Asha") {
		t.Errorf("signed in as %q", got)
	}

	// Slow admission down first (one fan every five seconds), so the crowd below waits.
	rate := `#r-` + show
	op.WaitFor("the settings", `document.querySelector("`+rate+`").value !== ""`)
	set(rate, "0.2")
	op.JS(`document.querySelector("` + rate + `").form.querySelector('button[type="submit"]').click()`)
	awaitQueue(t, c, show, func(q fsclient.QueueSettings) bool { return q.AdmitPerSecond == 0.2 })

	// The queue switch: a checkbox with role switch whose accessible name says "queue".
	sw := card + `.querySelector('input[role="switch"]')`
	if name := op.Text(sw + `.labels[0].textContent`); !strings.Contains(strings.ToLower(name), "queue") {
		t.Fatalf("the switch's name %q does not say queue", name)
	}
	op.JS(sw + `.click()`)
	awaitQueue(t, c, show, func(q fsclient.QueueSettings) bool { return q.Enabled })
	op.WaitFor("the switch on", sw+`.checked`)

	// The public API now refuses a hold without admission.
	fan := guestFan(t, c)
	if _, res, _ := c.Hold(ctx, fan.Token, "", show, []string{"A1"}, ""); res.Status != 403 {
		t.Fatalf("hold without admission with the queue on: %d, want 403", res.Status)
	}

	// Pause admission before the crowd, so nobody is admitted while they join.
	pause := card + `.querySelector('button[data-c="pause"]')`
	op.WaitFor("the pause button", pause+`.textContent === "Pause admission" && !`+pause+`.disabled`)
	op.JS(pause + `.click()`)
	op.WaitFor("paused", pause+`.textContent === "Resume admission"`)
	awaitQueue(t, c, show, func(q fsclient.QueueSettings) bool { return q.Paused })

	// The crowd arrives: the waiting figure rises, live.
	var crowd []fsclient.Guest
	for i := 0; i < 6; i++ {
		g := guestFan(t, c)
		if q, res, err := c.Join(ctx, g.Token, show, ""); err != nil || q.Status != "waiting" {
			t.Fatalf("join: %+v %d %v", q, res.Status, err)
		}
		crowd = append(crowd, g)
		if i == 2 {
			op.WaitFor("3 waiting", fig("waiting")+` === "3 waiting"`)
		}
	}
	op.WaitFor("6 waiting", fig("waiting")+` === "6 waiting"`)
	time.Sleep(1500 * time.Millisecond)
	if got := op.Text(fig("admitted")); got != "0 admitted" {
		t.Fatalf("admitted while paused: %q", got)
	}

	// Resume, faster: fans are admitted.
	set(rate, "5")
	op.JS(`document.querySelector("` + rate + `").form.querySelector('button[type="submit"]').click()`)
	op.JS(pause + `.click()`)
	op.WaitFor("resumed", pause+`.textContent === "Pause admission"`)
	op.WaitFor("admissions", fig("waiting")+` === "0 waiting" && `+fig("admitted")+` === "6 admitted"`)

	// The first fan is admitted: their token holds a seat; the operator looks them up and kicks them.
	first := crowd[0]
	st, _, err := c.QueueStatus(ctx, first.Token, show)
	if err != nil || st.Status != "admitted" || st.AdmissionToken == "" {
		t.Fatalf("first fan: %+v %v", st, err)
	}
	if _, res, err := c.Hold(ctx, first.Token, st.AdmissionToken, show, []string{"A2"}, ""); err != nil || res.Status != 201 {
		t.Fatalf("admitted hold: %d %v", res.Status, err)
	}
	op.JS(`document.getElementById("fan-show").value = "` + show + `"`)
	set("#fan-user", first.UserID)
	op.JS(`document.querySelector('#fan-form button[type="submit"]').click()`)
	op.WaitFor("the fan", `document.querySelector('#fan-result [data-c="place"]')?.textContent.startsWith("Admitted")`)
	op.WaitFor("their booking", `document.querySelector('#fan-result [data-c="bookings"]').textContent.includes("HELD")`)
	op.JS(`[...document.querySelectorAll("#fan-result button")].find((b) => b.textContent.startsWith("Kick")).click()`)
	op.WaitFor("kicked", `document.getElementById("fan-result").textContent.includes("revoked")`)
	if _, res, _ := c.Hold(ctx, first.Token, st.AdmissionToken, show, []string{"A3"}, ""); res.Status != 403 {
		t.Fatalf("hold after the kick: %d, want 403", res.Status)
	}

	// The changes are in the console's audit list, by name.
	op.JS(`document.getElementById("audit-refresh").click()`)
	op.WaitFor("the audit list", `document.getElementById("audit").textContent.includes("console:Asha")`)

	// Sign out: the console is gone and its session with it.
	op.JS(`document.getElementById("signout").click()`)
	op.WaitFor("signed out", `!document.getElementById("signin").hidden && document.getElementById("app").hidden`)
	if got := op.Await(`fetch("/admin/v1/stats").then((r) => String(r.status))`); got != "401" {
		t.Fatalf("operator API after sign-out: %s", got)
	}
}

func guestFan(t *testing.T, c *fsclient.Client) fsclient.Guest {
	t.Helper()
	g, res, err := c.NewGuest(context.Background())
	if err != nil {
		t.Fatalf("guest: %d %v", res.Status, err)
	}
	return g
}

// awaitQueue polls the operator API until the show's queue settings satisfy ok (a change made from the page).
func awaitQueue(t *testing.T, c *fsclient.Client, show string, ok func(fsclient.QueueSettings) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		q, err := c.Queue(context.Background(), show)
		if err == nil && ok(q) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue settings %+v (%v) never changed as the page asked", q, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestOperatorConsoleWithoutItsStream: an operator whose network refuses the console's event stream, or whose
// browser has no EventSource, still sees the figures move: the console reads them every two seconds instead.
func TestOperatorConsoleWithoutItsStream(t *testing.T) {
	if testing.Short() {
		t.Skip("browser")
	}
	t.Parallel()
	p, c := journeyPlatform(t)
	show := newShow(t, c, showSpec{title: "Polled " + uuid.NewString()[:6], saleIn: -time.Minute})
	br := browsertest.New(t)
	for i, blocked := range []string{"stream refused", "no EventSource"} {
		t.Run(blocked, func(t *testing.T) {
			op := br.FanFor(t, "operator", 4*time.Minute)
			if blocked == "no EventSource" {
				op.OnNewDocument(`delete window.EventSource;`)
			} else {
				op.FailRequests("*/admin/live")
			}
			op.Go(p.BaseURL + "/admin")
			op.WaitFor("the sign-in form", `!document.getElementById("signin").hidden`)
			op.JS(`document.getElementById("token").value = ` + strconv.Quote(p.AdminToken) +
				`; document.getElementById("opname").value = "Ravi"`)
			op.JS(`document.querySelector('#signin-form button[type="submit"]').click()`)
			available := `document.querySelector('article[data-show="` + show + `"] [data-f="available"]')?.textContent`
			op.WaitFor("the figures, polled", available+`?.includes("available") && `+
				`document.getElementById("status").textContent.includes("read every two seconds")`)
			before := op.Text(available)
			fan := guestFan(t, c)
			seat := []string{"A1", "A2"}[i]
			if _, res, err := c.Hold(context.Background(), fan.Token, "", show, []string{seat}, ""); err != nil || res.Status != 201 {
				t.Fatalf("hold: %d %v", res.Status, err)
			}
			op.WaitFor("the hold in the figures", available+` !== `+strconv.Quote(before))
		})
	}
}
