package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/flashseat/flashseat/loadtest/browsertest"
	"github.com/flashseat/flashseat/loadtest/platformtest"
	"github.com/flashseat/flashseat/shared/admission"
)

// TestOperatorConsoleBotsInBrowser: an operator watches a show's bot protection from the console's Bots panel
// and acts on it, in a real browser, through the real edge and booking (no route stubbed; any console error fails
// the test). A fan's guarded join (refused without a proof, then let in with the solved one) moves the panel's
// figures: challenges issued and solved, the median solve time, the refusal by reason, the fan's prefix and its
// place. The operator blocks two prefixes with the panel's form (an IPv6 address is blocked as its /64), sees them
// listed and the blocks in the Changes list, is told in an alert why a malformed prefix cannot be blocked,
// unblocks one, and saves the show's bot settings with the queue settings form, which keeps the blocks.
func TestOperatorConsoleBotsInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser")
	}
	t.Parallel()
	p, c := journeyPlatform(t)
	ctx := context.Background()
	title := "Nagamandala " + uuid.NewString()[:6]
	show := newShow(t, c, showSpec{title: title, saleIn: -time.Minute, queue: true})
	op, set, text := consoleOperator(t, p)
	fig := func(name string) string { return text(`#bot-figs [data-f="` + name + `"]`) }
	op.WaitFor("the console", `!document.getElementById("app").hidden`)

	// The Bots panel, for this show: a select with a label, the show's protection in words, nothing counted yet.
	op.WaitFor("the show in the Bots panel's select", `[...document.getElementById("bot-show").options].some((o) => o.value === "`+show+`")`)
	if got := op.Text(`document.getElementById("bot-show").labels[0].textContent`); got != "Show" {
		t.Errorf("the show select's label is %q", got)
	}
	op.JS(`(() => { const s = document.getElementById("bot-show"); s.value = "` + show + `"; s.dispatchEvent(new Event("change")); })()`)
	op.WaitFor("the panel", `!document.getElementById("bot-panel").hidden && `+fig("issued")+` === "0 issued"`)
	if got := op.Text(text("#bot-state")); !strings.HasPrefix(got, "On: every new place needs a proof of work") ||
		!strings.Contains(got, "refused") {
		t.Errorf("the protection in words: %q", got)
	}
	if got := op.Text(fig("median")); got != "none solved yet" {
		t.Errorf("median before any solve: %q", got)
	}

	// A guarded join: refused without a proof (a challenge issued), then in with the solved proof.
	fan := guestFan(t, c)
	if q, res, err := c.Join(ctx, fan.Token, show, ""); err != nil || q.Status == "" {
		t.Fatalf("guarded join: %+v %d %v", q, res.Status, err)
	}
	op.WaitFor("the join in the figures", fig("issued")+` === "1 issued" && `+fig("solved")+` === "1 solved" && `+
		fig("failed")+` === "0 failed"`)
	if got := op.Text(fig("median")); !strings.HasSuffix(got, " ms") && !strings.HasSuffix(got, " s") {
		t.Errorf("median solve time %q", got)
	}
	op.WaitFor("the refusal by reason", text(`#bot-refusals [data-reason="proof-required"]`)+`.startsWith("1 came without a proof of work")`)
	op.WaitFor("the fan's prefix with its place",
		`[...document.querySelectorAll("#bot-prefixes tbody tr")].some((r) => r.cells[1]?.textContent === "1")`)

	// Block two prefixes from the form: a labelled input and a real button.
	input := `document.getElementById("block-prefix")`
	if got := op.Text(input + `.labels[0].textContent`); !strings.Contains(got, "Block a prefix") {
		t.Errorf("the prefix input's label is %q", got)
	}
	submit := `document.querySelector('#block-form button[type="submit"]').click()`
	set("#block-prefix", "203.0.113.7")
	op.JS(submit)
	op.WaitFor("the first block listed", text("#blocked")+`.includes("203.0.113.7") && `+
		text("#block-result")+`.startsWith("Blocked 203.0.113.7")`)
	set("#block-prefix", "2001:db8:1:2::5")
	op.JS(submit)
	op.WaitFor("the /64 listed", text("#blocked")+`.includes("2001:db8:1:2::/64")`)
	if got := op.Text(input + `.value`); got != "" {
		t.Errorf("the input after a block holds %q", got)
	}
	if got := botSettings(t, p, show).Bot.Blocked(); !slices.Equal(got, []string{"203.0.113.7", "2001:db8:1:2::/64"}) {
		t.Fatalf("blocked prefixes on record %v", got)
	}
	op.WaitFor("the blocks in the Changes list", text("#audit")+`.includes("console:Meera: queue.prefix.block on `+show+`") && `+
		text("#audit")+`.includes("2001:db8:1:2::/64")`)

	// A malformed prefix: refused, and said in an alert.
	set("#block-prefix", "not-a-prefix")
	op.JS(submit)
	op.WaitFor("the refusal", `document.querySelector('#block-error[role="alert"]').textContent.includes("prefix")`)

	// Unblock the first: gone from the list and the record, in the Changes list too.
	op.JS(`document.querySelector('#blocked button[aria-label="Unblock 203.0.113.7"]').click()`)
	op.WaitFor("the unblock", `!`+text("#blocked")+`.includes("203.0.113.7") && `+text("#blocked")+`.includes("2001:db8:1:2::/64")`)
	op.WaitFor("the unblock in the Changes list", text("#audit")+`.includes("queue.prefix.unblock")`)
	if got := op.Text(`document.activeElement.id`); got != "block-prefix" {
		t.Errorf("focus after unblocking is on %q, want the prefix input", got)
	}

	// The bot settings, in the show's queue settings form, from the values in force; saved with the queue's PUT.
	card := `document.querySelector('article[data-show="` + show + `"]')`
	field := func(name string) string { return `document.getElementById("` + name + `-` + show + `")` }
	op.WaitFor("the settings form filled", field("bd")+`.value === "100000" && `+field("bp")+`.checked && `+
		field("sr")+`.checked && `+field("th")+`.value === "10"`)
	if got := op.Text(field("bp") + `.labels[0].textContent`); !strings.HasPrefix(got, "Bot protection") ||
		op.Text(field("bp")+`.getAttribute("role")`) != "switch" {
		t.Errorf("the protection switch: label %q", got)
	}
	set("#bd-"+show, "2000")
	set("#pp-"+show, "5")
	set("#th-"+show, "3")
	op.JS(field("ss") + `.click(); ` + field("ao") + `.click(); ` +
		card + `.querySelector('form.settings button[type="submit"]').click()`)
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := botSettings(t, p, show)
		b := st.Bot
		if b.Enabled && b.BaseDifficulty == 2000 && b.PrefixPlaces == 5 && b.Suspects == admission.SuspectsShadow &&
			b.AccountsOnly && !b.HumanCheck && st.TurnHoldSeconds == 180 {
			if got := b.Blocked(); !slices.Equal(got, []string{"2001:db8:1:2::/64"}) {
				t.Fatalf("the settings' save changed the blocked prefixes: %v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bot settings on record %+v, turn hold %d: never what the form saved", b, st.TurnHoldSeconds)
		}
		time.Sleep(100 * time.Millisecond)
	}
	op.WaitFor("the new settings in words", text("#bot-state")+`.includes("from accounts only; at most 5 places per prefix") && `+
		text("#bot-state")+`.includes("given a place that never comes up")`)
}

// botSettings reads the show's queue settings from the operator API, bot protection and turn hold included.
func botSettings(t *testing.T, p *platformtest.Platform, show string) admission.Settings {
	t.Helper()
	req, _ := http.NewRequest("GET", p.BaseURL+"/admin/v1/shows/"+show+"/queue", nil)
	req.Header.Set("Authorization", "Bearer "+p.AdminToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var st admission.Settings
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil || res.StatusCode != 200 {
		t.Fatalf("queue settings: %d %v", res.StatusCode, err)
	}
	return st
}

// consoleOperator opens the console in a browser of its own and signs Meera in with the admin token; set types
// into a field as a person would, text reads an element's text in the page.
func consoleOperator(t *testing.T, p *platformtest.Platform) (op *browsertest.Fan, set func(sel, v string), text func(sel string) string) {
	t.Helper()
	op = browsertest.New(t).Fan("operator", 4*time.Minute)
	text = textOf
	set = func(sel, v string) {
		op.JS(`(() => { const e = document.querySelector(` + strconv.Quote(sel) + `); e.value = ` + strconv.Quote(v) +
			`; e.dispatchEvent(new Event("input")); })()`)
	}
	op.Go(p.BaseURL + "/admin")
	op.WaitFor("the sign-in form", `!document.getElementById("signin").hidden`)
	set("#token", p.AdminToken)
	set("#opname", "Meera")
	op.JS(`document.querySelector('#signin-form button[type="submit"]').click()`)
	return op, set, text
}
