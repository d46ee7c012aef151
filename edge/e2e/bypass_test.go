package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/loadtest/browsertest"
)

// TestBypassCodeInBrowser: an operator, in the console's Bypass codes panel, gives a show's queue page a message
// in Hindi and issues a code; a fan on the queue page, behind another fan in a line that barely moves, sees the
// message, is told in an alert that a mistyped code did not work (keeping their place), then enters the code and
// goes straight to the seat map. The console then lists the code as used up, and revokes it. All through the real
// edge and booking, with the queue and its bot protection on; no route is stubbed and any console error fails.
func TestBypassCodeInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser")
	}
	t.Parallel()
	p, _, show := slowQueue(t, "Tughlaq")
	br := browsertest.New(t)
	text := textOf

	// The operator: the page's message and language, then one code for one fan.
	op := br.Fan("operator", 3*time.Minute)
	set := func(f *browsertest.Fan, sel, v string) {
		f.JS(`(() => { const e = document.querySelector(` + strconv.Quote(sel) + `); e.value = ` + strconv.Quote(v) +
			`; e.dispatchEvent(new Event("input")); })()`)
	}
	op.Go(p.BaseURL + "/admin")
	op.WaitFor("the sign-in form", `!document.getElementById("signin").hidden`)
	set(op, "#token", p.AdminToken)
	set(op, "#opname", "Ravi")
	op.JS(`document.querySelector('#signin-form button[type="submit"]').click()`)
	op.WaitFor("the console", `!document.getElementById("app").hidden`)
	op.WaitFor("the show in the codes panel", `[...document.getElementById("codes-show").options].some((o) => o.value === "`+show+`")`)
	op.JS(`(() => { const s = document.getElementById("codes-show"); s.value = "` + show + `"; s.dispatchEvent(new Event("change")); })()`)
	op.WaitFor("the panel", `!document.getElementById("codes-panel").hidden && `+text("#codes tbody")+`.includes("No code issued")`)
	for _, id := range []string{"page-message", "page-language", "codes-count", "codes-uses", "codes-expiry"} {
		if got := op.Text(`document.getElementById("` + id + `").labels[0]?.textContent ?? ""`); got == "" {
			t.Errorf("#%s has no label", id)
		}
	}
	set(op, "#page-message", "कृपया फ़ोटो पहचान पत्र साथ लाएँ।")
	set(op, "#page-language", "hi")
	op.JS(`document.querySelector('#page-form button[type="submit"]').click()`)
	op.WaitFor("the page saved", text("#page-result")+`.startsWith("Saved")`)
	set(op, "#codes-count", "1")
	set(op, "#codes-uses", "1")
	op.JS(`document.querySelector('#codes-form button[type="submit"]').click()`)
	op.WaitFor("the new code", `document.querySelectorAll("#codes-new code").length === 1 && `+text("#codes tbody")+`.includes("0 of 1")`)
	code := op.Text(text("#codes-new code"))
	if len(code) != 23 || !strings.Contains(op.Text(text("#codes-result")), "not shown again") {
		t.Fatalf("issued %q: %s", code, op.Text(text("#codes-result")))
	}

	// The fan: in line behind the other, with the organiser's message.
	fan := br.Fan("fan with a code", 3*time.Minute)
	fan.Go(p.BaseURL + "/shows/" + show)
	fan.WaitFor("a place in line", `location.pathname === "/queue/`+show+`" && !document.getElementById("waiting").hidden && `+
		text("#position")+` === "2"`)
	if got := fan.Text(text("#message p")); got != "कृपया फ़ोटो पहचान पत्र साथ लाएँ।" ||
		fan.Text(`document.querySelector("#message p").lang`) != "hi" {
		t.Errorf("the organiser's message on the page: %q", got)
	}
	if got := fan.Text(`document.getElementById("bypass-code").labels[0].textContent`); got != "Bypass code" {
		t.Errorf("the code's label: %q", got)
	}
	set(fan, "#bypass-code", "AAAAA-BBBBB-CCCCC-DDDDD")
	fan.JS(`document.getElementById("bypass-use").click()`)
	fan.WaitFor("the refusal, said", `!document.getElementById("bypass-error").hidden && `+
		`document.querySelector('#bypass-error[role="alert"]').textContent.startsWith("That code did not work")`)
	if got := fan.Text(text("#position")); got != "2" || fan.Path() != "/queue/"+show {
		t.Fatalf("after a wrong code the fan is at %q in %s", got, fan.Path())
	}
	set(fan, "#bypass-code", strings.ToLower(code))
	fan.JS(`document.getElementById("bypass-use").click()`)
	fan.WaitFor("the seats", `location.pathname === "/shows/`+show+`"`)
	fan.WaitFor("the seat map", seat("A1")+` !== null`)

	// The console: used up, then revoked; both in the Changes list.
	op.JS(`(() => { const s = document.getElementById("codes-show"); s.dispatchEvent(new Event("change")); })()`)
	op.WaitFor("the code used", text("#codes tbody")+`.includes("1 of 1") && `+text("#codes tbody")+`.includes("used up")`)
	op.JS(`document.querySelector('#codes tbody button').click()`)
	op.WaitFor("the code revoked", text("#codes tbody")+`.includes("revoked") && `+text("#codes-result")+`.startsWith("Revoked")`)
	op.WaitFor("the changes", text("#audit")+`.includes("bypass.use") && `+text("#audit")+`.includes("bypass.revoke") && `+
		text("#audit")+`.includes("console:Ravi: bypass.issue")`)
	if strings.Contains(op.Text(text("#audit")), code) {
		t.Error("the Changes list shows a code")
	}
}
