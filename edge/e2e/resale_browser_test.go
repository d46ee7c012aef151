package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestResaleInBrowser: the face-value exchange as two fans use it, through the real edge and booking with the
// show's queue on. Fan A buys two GOLD seats (450.00 INR each; the exchange caps them at 80%, keeps 10%), tries to
// list one above the cap and is told the cap, lists it at the cap and sees it Listed; fan B, in a browser of their
// own, passes the queue, finds it under "Tickets from fans" on the show page, buys it and pays on the normal
// checkout. A's page then shows the ticket Resold and the payout; B's booking has the ticket, whose new code
// checks in while A's old one is refused. A lists the other ticket and withdraws it: it admits again.
func TestResaleInBrowser(t *testing.T) {
	p, show, id, a, b := twoFans(t, "Tughlaq")
	admin(t, p, "PUT", "/admin/v1/shows/"+show, `{"resalePolicy":{"enabled":true,"maxPriceRatio":0.8,"feePercent":10}}`, nil)
	a.Go(p.BaseURL + "/bookings/" + id) // again, now that the exchange is open
	confirmed(t, a, id, 2)
	li := ticketItem
	button := func(text string) string {
		return `[...document.querySelectorAll("#tickets button")].find((b) => b.textContent === ` + jsString(text) + `)`
	}
	oldCode := decodeQR(t, a, a.Text(li("B3")+`.querySelector("img").getAttribute("src")`))
	price := func(v string) {
		a.JS(`document.querySelector("#tickets input[name=price]").value = ""`)
		if err := chromedp.Do(a.Ctx, chromedp.SendKeys(`#tickets input[name=price]`, v)); err != nil {
			t.Fatal(err)
		}
		a.JS(button("List seat B3") + `.click()`)
	}

	// A: "Sell seat B3 at face value…" opens a labelled price field naming the cap; above it the server's 422 is
	// told as the cap, at it the ticket is Listed.
	a.WaitFor("the sell button", button("Sell seat B3 at face value…")+` !== undefined`)
	a.JS(button("Sell seat B3 at face value…") + `.click()`)
	a.WaitFor("the price form", `document.activeElement?.name === "price"`)
	if got := a.Text(`document.activeElement.labels[0].textContent`); got != "Price (INR)" {
		t.Errorf("the price field's label: %q", got)
	}
	if got := a.Text(`document.getElementById(document.activeElement.getAttribute("aria-describedby")).textContent`); !strings.Contains(got, "At most 360.00 INR") {
		t.Errorf("the price field's hint: %q", got)
	}
	price("400")
	a.WaitFor("the cap refusal", `document.querySelector("#tickets .resale-form [role=alert]")?.textContent.includes("above the cap")`)
	if got := a.Text(`document.querySelector("#tickets .resale-form [role=alert]").textContent`); !strings.Contains(got, "360.00 INR at most") {
		t.Errorf("A is told %q", got)
	}
	price("360")
	a.WaitFor("Listed", li("B3")+`?.dataset.status === "LISTED" && `+li("B3")+`.textContent.includes("Listed on the exchange at 360.00 INR")`)
	if got := a.Text(`document.getElementById("resale-status").textContent`); !strings.Contains(got, "Seat B3 is listed at 360.00 INR") {
		t.Errorf("A's announcement: %q", got)
	}

	// B passes the queue to the show page, finds the listing and buys it; the checkout is the normal one.
	b.Go(p.BaseURL + "/shows/" + show)
	buy := `document.querySelector("#fans-list button")`
	b.WaitFor("the fans' tickets", `location.pathname === "/shows/`+show+`" && !document.getElementById("fans").hidden && `+buy+` !== null`)
	if got := b.Text(buy + `.textContent`); got != "Buy seat B3 · 360.00 INR" {
		t.Errorf("B's buy button: %q", got)
	}
	b.JS(buy + `.click()`)
	b.WaitFor("the checkout", `location.pathname.startsWith("/checkout/")`)
	bid := strings.TrimPrefix(b.Path(), "/checkout/")
	b.WaitFor("the listing's price as the total", `document.getElementById("total")?.textContent === "360.00 INR"`)
	typeCard(b, cardOK)
	confirmed(t, b, bid, 1)
	newCode := decodeQR(t, b, b.Text(`document.querySelector("#tickets img").getAttribute("src")`))
	if newCode == oldCode {
		t.Fatal("the bought ticket kept the seller's code")
	}

	// A's page: B3 Resold, the payout of 360.00 less 10%.
	a.Go(p.BaseURL + "/bookings/" + id)
	a.WaitFor("Resold", li("B3")+`?.dataset.status === "RESOLD" && document.querySelector("#resale ul.payouts li") !== null`)
	if got := a.Text(li("B3") + `.textContent`); !strings.Contains(got, "Resold") {
		t.Errorf("A's B3: %q", got)
	}
	if got := a.Text(`document.querySelector("#resale ul.payouts").textContent`); !strings.Contains(got, "Seat B3 resold: you are paid 324.00 INR") {
		t.Errorf("A's payout: %q", got)
	}
	if st := checkIn(t, p, oldCode); st != http.StatusConflict {
		t.Errorf("A's old code at the door: %d, want 409", st)
	}
	if st := checkIn(t, p, newCode); st != http.StatusOK {
		t.Errorf("B's new code at the door: %d, want 200", st)
	}

	// A lists B4 and withdraws it.
	a.WaitFor("B4's sell button", button("Sell seat B4 at face value…")+` !== undefined`)
	a.JS(button("Sell seat B4 at face value…") + `.click()`)
	a.WaitFor("the price form", `document.activeElement?.name === "price"`)
	a.JS(button("List seat B4") + `.click()`) // the cap, as the form proposes it
	a.WaitFor("B4 listed", button("Withdraw listing of seat B4")+` !== undefined`)
	a.JS(button("Withdraw listing of seat B4") + `.click()`)
	a.WaitFor("B4 withdrawn", li("B4")+`?.dataset.status === "VALID" && `+button("Sell seat B4 at face value…")+` !== undefined`)
	if got := a.Text(`document.getElementById("resale-status").textContent`); !strings.Contains(got, "Seat B4 is off the exchange") {
		t.Errorf("A's announcement: %q", got)
	}
}
