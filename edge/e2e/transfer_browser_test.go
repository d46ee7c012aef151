package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestTransferInBrowser: the transfer, as two people do it, through the real edge and booking with the
// show's queue on. Fan A buys two seats on the seat map, sends one ticket from the booking page to a friend's
// e-mail and gets its claim link; fan B, in a browser of their own, opens the link, claims the ticket and sees its
// new QR code. A's old code is refused at the door and B's checks in once; A's other ticket is untouched; both
// fans see the transfer, and a second transfer A cancels is refused to whoever opens its link.
func TestTransferInBrowser(t *testing.T) {
	p, _, id, a, b := twoFans(t, "Nagamandala")
	li := ticketItem
	oldCode := decodeQR(t, a, a.Text(li("B3")+`.querySelector("img").getAttribute("src")`))
	otherCode := decodeQR(t, a, a.Text(li("B4")+`.querySelector("img").getAttribute("src")`))

	// A: "Transfer seat B3…" opens a labelled e-mail field; "Send ticket" answers the claim link.
	transferButton := `[...document.querySelectorAll("#tickets button")].find((b) => b.textContent === "Transfer seat B3…")`
	a.WaitFor("the transfer button", transferButton+` !== undefined`)
	a.JS(transferButton + `.click()`)
	a.WaitFor("the transfer form", `document.activeElement?.type === "email"`)
	if got := a.Text(`document.activeElement.labels[0].textContent`); got != "Friend's e-mail (optional)" {
		t.Errorf("the e-mail field's label: %q", got)
	}
	if err := chromedp.Do(a.Ctx, chromedp.SendKeys(`#tickets input[type="email"]`, "friend@example.com")); err != nil {
		t.Fatal(err)
	}
	a.JS(`[...document.querySelectorAll("#tickets button")].find((b) => b.textContent === "Send ticket").click()`)
	a.WaitFor("the claim link", `document.querySelector("#tickets input.claim-link") !== null`)
	link := a.Text(`document.querySelector("#tickets input.claim-link").value`)
	if !strings.HasPrefix(link, p.BaseURL+"/transfers/tr_") || !strings.Contains(link, "#") {
		t.Fatalf("claim link %q", link)
	}
	if got := a.Text(`document.querySelector("#tickets input.claim-link").labels[0].textContent`); got != "Claim link for seat B3" {
		t.Errorf("the link's label: %q", got)
	}
	if got := a.Text(`document.querySelector("#tickets .transfer [role=status]").textContent`); !strings.Contains(got, "Sent to friend@example.com") {
		t.Errorf("A is told %q", got)
	}
	a.WaitFor("the pending transfer listed", `document.querySelector("#transfers li[data-status=PENDING]") !== null && !document.getElementById("transfers").hidden`)
	if got := a.Text(`document.querySelector("#transfers li[data-status=PENDING]").textContent`); !strings.Contains(got, "Seat B3 sent to friend@example.com") {
		t.Errorf("A's pending transfer: %q", got)
	}

	// B opens the link in a browser of their own (signed in as a guest by the page) and claims the ticket.
	b.Go(link)
	b.WaitFor("the claim page", `location.pathname.startsWith("/transfers/") && !document.getElementById("claim-button").disabled`)
	b.JS(`document.getElementById("claim-button").click()`)
	b.WaitFor("the ticket claimed", `document.getElementById("title").textContent === "Your ticket" && document.querySelector("#tickets img")?.complete && document.querySelector("#tickets img").naturalWidth > 0`)
	if got := b.Text(`document.getElementById("tickets").textContent`); !strings.Contains(got, "Seat B3") || !strings.Contains(got, "Ranga Shankara") {
		t.Errorf("B's ticket: %q", got)
	}
	newCode := decodeQR(t, b, b.Text(`document.querySelector("#tickets img").getAttribute("src")`))
	if newCode == oldCode {
		t.Fatal("the claimed ticket kept the old code")
	}
	if st := checkIn(t, p, oldCode); st != http.StatusConflict {
		t.Errorf("A's old code at the door: %d, want 409", st)
	}
	if first, again := checkIn(t, p, newCode), checkIn(t, p, newCode); first != http.StatusOK || again != http.StatusConflict {
		t.Errorf("B's new code: %d then %d, want 200 then 409", first, again)
	}

	// Both see the transfer: A's booking page says B3 was transferred and lists it claimed; B's "My bookings"
	// lists the ticket received with its QR code.
	a.Go(p.BaseURL + "/bookings/" + id)
	a.WaitFor("the claimed transfer", `document.querySelector("#transfers li[data-status=CLAIMED][data-direction=sent]") !== null`)
	if got := a.Text(li("B3") + `.dataset.status`); got != "TRANSFERRED" {
		t.Errorf("A's B3 ticket is %q", got)
	}
	b.Go(p.BaseURL + "/bookings")
	b.WaitFor("the received ticket", `document.querySelector("#transfers li[data-status=CLAIMED][data-direction=received] img")?.naturalWidth > 0`)

	// A sends B4 by link alone and cancels it; the link then tells B it is closed.
	a.Go(p.BaseURL + "/bookings/" + id)
	send4 := `[...document.querySelectorAll("#tickets button")].find((b) => b.textContent === "Transfer seat B4…")`
	a.WaitFor("B4's transfer button", send4+` !== undefined`)
	a.JS(send4 + `.click()`)
	a.WaitFor("the transfer form", `document.activeElement?.type === "email"`)
	a.JS(`[...document.querySelectorAll("#tickets button")].find((b) => b.textContent === "Send ticket").click()`)
	a.WaitFor("the claim link", `document.querySelector("#tickets input.claim-link") !== null`)
	link4 := a.Text(`document.querySelector("#tickets input.claim-link").value`)
	cancel := `[...document.querySelectorAll("#transfers button")].find((b) => b.textContent === "Cancel transfer of seat B4")`
	a.WaitFor("the cancel button", cancel+` !== undefined`)
	a.JS(cancel + `.click()`)
	a.WaitFor("the transfer cancelled", `document.querySelector("#transfers li[data-status=CANCELLED]") !== null`)
	b.Go(link4)
	b.WaitFor("the claim page", `!document.getElementById("claim-button").disabled`)
	b.JS(`document.getElementById("claim-button").click()`)
	b.WaitFor("the refusal", `document.getElementById("error").textContent.includes("CANCELLED")`)
	if st := checkIn(t, p, otherCode); st != http.StatusOK {
		t.Errorf("A's B4 after its transfer was cancelled: %d, want 200", st)
	}
}
