package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashseat/flashseat/loadtest/browsertest"
)

// TestConsoleWebhooksInBrowser: an operator signs in to the console, registers a webhook for every show and is
// shown its secret once; a fan's hold reaches the endpoint; the operator opens its deliveries, sees the delivery,
// replays it (the endpoint receives it again), rolls the secret (the new one is shown once) and deletes the
// webhook.
func TestConsoleWebhooksInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser")
	}
	t.Parallel()
	p := start(t, map[string]string{"ADMIN_TOKEN": adminToken})
	// Only the hold's event is counted: the endpoint takes every show's events (a queue's phase changes too), and no
	// other may pass for the hold's delivery or its replay.
	var got atomic.Int64
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct{ Type string }
		if r.Header.Get("Flashseat-Signature") != "" && json.NewDecoder(r.Body).Decode(&ev) == nil && ev.Type == "booking.held" {
			got.Add(1)
		}
	}))
	defer recv.Close()

	op := browsertest.New(t).Fan("operator", 4*time.Minute)
	op.AllowMissing("/favicon.ico") // the console has no icon of its own (not this test's concern)
	op.Go(p.edge + "/admin")
	op.JS(`document.getElementById("token").value = "` + adminToken + `"; document.getElementById("opname").value = "ana";` +
		`document.querySelector("#signin-form button[type=submit]").click()`)
	op.WaitFor("the console", `!document.getElementById("app").hidden`)
	op.JS(`document.getElementById("hook-url").value = "` + recv.URL + `/hook";` +
		`document.querySelector("#hook-form button[type=submit]").click()`)
	op.WaitFor("the webhook listed", `document.querySelectorAll("#hooks li").length === 1`)
	res := op.Text(`document.getElementById("hook-result").textContent`)
	if !strings.Contains(res, "whsec_") {
		t.Errorf("registration result %q, want the secret shown once", res)
	}
	first := res[strings.LastIndex(res, " ")+1:] // the registered secret

	_, tok := guest(t, p)
	hold := fmt.Sprintf(`{"showId":%q,"seatIds":["C3"]}`, p.show)
	if status, b := send(t, "POST", p.edge+"/api/v1/bookings/hold", hold, map[string]string{"Authorization": "Bearer " + tok}); status != 201 {
		t.Fatalf("hold: %d %s", status, b)
	}
	for deadline := time.Now().Add(time.Minute); got.Load() == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the hold's event never reached the webhook")
		}
	}

	// The receiver counts a delivery before the sender records it DELIVERED, and the page reads the list once per
	// click: wait for the record, so the page is not shown a delivery still PENDING.
	auth := map[string]string{"Authorization": "Bearer " + adminToken}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		_, hooks := send(t, "GET", p.edge+"/admin/v1/webhooks", "", auth)
		var list struct{ Webhooks []struct{ ID string } }
		_ = json.Unmarshal(hooks, &list)
		if len(list.Webhooks) == 1 {
			_, ds := send(t, "GET", p.edge+"/admin/v1/webhooks/"+list.Webhooks[0].ID+"/deliveries", "", auth)
			var page struct {
				Deliveries []struct{ EventType, Status string }
			}
			_ = json.Unmarshal(ds, &page)
			if slices.ContainsFunc(page.Deliveries, func(d struct{ EventType, Status string }) bool {
				return d.EventType == "booking.held" && d.Status == "DELIVERED"
			}) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the delivery was never recorded DELIVERED")
		}
	}
	deliveries := `document.querySelector('#hooks button[aria-label^="Deliveries"]').click()`
	op.JS(deliveries)
	op.WaitFor("the delivery listed", `[...document.querySelectorAll("#deliveries li")].some((li) => /booking\.held .*DELIVERED/.test(li.textContent))`)
	op.JS(`document.querySelector('#deliveries button[aria-label^="Replay booking.held"]').click()`)
	for deadline := time.Now().Add(time.Minute); got.Load() < 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the replay never reached the webhook")
		}
	}
	op.JS(`document.querySelector('#hooks button[aria-label^="Roll the secret"]').click()`)
	op.WaitFor("the new secret shown", `/New signing secret, shown this once: whsec_\w+\. The old one also signs until /.test(document.getElementById("hook-result").textContent)`)
	if res := op.Text(`document.getElementById("hook-result").textContent`); strings.Contains(res, first) {
		t.Errorf("rolled secret result %q repeats the first secret", res)
	}
	op.JS(`document.querySelector('#hooks button[aria-label^="Delete"]').click()`)
	op.WaitFor("the webhook gone", `document.querySelectorAll("#hooks li").length === 0`)
}
