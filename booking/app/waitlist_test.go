package app_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking/internal/bookingtest"
	"github.com/flashseat/flashseat/booking/payment/sim"
	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/admission/admissiontest"
	"github.com/flashseat/flashseat/shared/infra/smtptest"
)

// TestWaitlist: a show with seats on sale refuses the waitlist (409); once every seat is held, fans join first
// come first served, a fan joining again keeps the place, and bad input is a 4xx problem.
func TestWaitlist(t *testing.T) {
	t.Parallel()
	c := client{t: t, base: startBooking(t, nil, nil)}
	var v struct {
		Halls []struct{ HallID string }
	}
	c.call("POST", "/admin/v1/venues", testAdmin, map[string]any{"name": "Tiny", "city": "Pune",
		"halls": []any{map[string]any{"name": "Box", "rows": []any{map[string]any{"row": "A", "seats": 2, "category": "GOLD"}}}}}, &v)
	var e struct{ EventID string }
	c.call("POST", "/admin/v1/events", testAdmin, map[string]any{"title": "Tiny gig", "kind": "concert", "durationMinutes": 60}, &e)
	var s struct{ ShowID string }
	if st := c.call("POST", "/admin/v1/shows", testAdmin, map[string]any{"eventId": e.EventID, "hallId": v.Halls[0].HallID,
		"startsAt":     time.Now().Add(72 * time.Hour).UTC().Format(time.RFC3339),
		"saleStartsAt": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339),
		"currency":     "INR", "prices": map[string]int{"GOLD": 1000}}, &s); st != http.StatusCreated {
		t.Fatalf("show: %d", st)
	}
	guest := func() string {
		var g struct{ Token string }
		c.call("POST", "/api/v1/auth/guest", "", nil, &g)
		return g.Token
	}
	path := "/api/v1/shows/" + s.ShowID + "/waitlist"
	first := guest()

	var p struct {
		Type   string
		Status int
	}
	if st := c.call("POST", path, first, map[string]int{"seats": 1}, &p); st != http.StatusConflict || p.Status != 409 {
		t.Fatalf("waitlist with seats on sale: got %d %+v, want 409 problem", st, p)
	}
	if st := c.call("POST", "/api/v1/bookings/hold", guest(), map[string]any{"showId": s.ShowID, "seatIds": []string{"A1", "A2"}}, nil); st != http.StatusCreated {
		t.Fatalf("hold: %d", st)
	}

	type entry struct{ Position, Seats int }
	var got entry
	if st := c.call("POST", path, first, map[string]int{"seats": 2}, &got); st != http.StatusCreated || got.Position != 1 || got.Seats != 2 {
		t.Fatalf("first join: got %d %+v, want 201 position 1", st, got)
	}
	// Ten more fans at once: each gets a distinct place after the first.
	var mu sync.Mutex
	seen := map[int]bool{}
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var e entry
			if st := c.call("POST", path, guest(), map[string]int{"seats": 1}, &e); st != http.StatusCreated {
				t.Errorf("join: %d", st)
			}
			mu.Lock()
			seen[e.Position] = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	for pos := 2; pos <= 11; pos++ {
		if !seen[pos] {
			t.Fatalf("positions %v: want each of 2..11 once", seen)
		}
	}
	if st := c.call("POST", path, first, map[string]int{"seats": 3}, &got); st != http.StatusCreated || got.Position != 1 || got.Seats != 3 {
		t.Fatalf("join again: got %d %+v, want the same place with the new count", st, got)
	}

	tests := []struct {
		name, path, auth string
		body             any
		want             int
	}{
		{"no token", path, "", map[string]int{"seats": 1}, http.StatusUnauthorized},
		{"zero seats", path, first, map[string]int{"seats": 0}, http.StatusUnprocessableEntity},
		{"too many seats", path, first, map[string]int{"seats": 11}, http.StatusUnprocessableEntity},
		{"missing seats", path, first, map[string]int{}, http.StatusBadRequest},
		{"wrong type", path, first, map[string]string{"seats": "two"}, http.StatusBadRequest},
		{"unknown show", "/api/v1/shows/nope/waitlist", first, map[string]int{"seats": 1}, http.StatusNotFound},
		{"junk show id", "/api/v1/shows/" + fmt.Sprintf("%s", "%E2%98%83") + "/waitlist", first, map[string]int{"seats": 1}, http.StatusNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p struct{ Status int }
			if st := c.call("POST", tc.path, tc.auth, tc.body, &p); st != tc.want || p.Status != tc.want {
				t.Fatalf("got %d (problem status %d), want %d", st, p.Status, tc.want)
			}
		})
	}
}

// TestWaitlistOfferOverHTTP: through the real server and gateway simulator. A fan on a sold-out show's waitlist
// has their page's stream open; the hold that sold the show out lapses; the stream announces the offer, GET shows
// it, and the fan pays it with no waiting-room admission although the show's queue is now on; the entry is then
// ACCEPTED. Another fan's offer they leave is cancelled. Operators see the whole line. Bad input is a 4xx problem.
func TestWaitlistOfferOverHTTP(t *testing.T) {
	t.Parallel()
	mail := smtptest.Start(t)
	// 4 s holds: with 1 s the hold that sells the show out had lapsed, at load 10, before the fans could join.
	st := newStack(t, "HOLD_TTL", "4s", "WAITLIST_OFFER_TTL", "20s", "RECONCILE_INTERVAL", "200ms",
		"EVENTS_RELAY_INTERVAL", "20ms", "SMTP_ADDR", mail.Addr)
	v := st.do("POST", "/admin/v1/venues", adminToken, map[string]any{"name": "Box", "city": "Pune",
		"halls": []any{map[string]any{"name": "1", "rows": []any{map[string]any{"row": "A", "seats": 2, "category": "GOLD"}}}}})
	hall := v.json(t)["halls"].([]any)[0].(map[string]any)["hallId"].(string)
	ev := st.do("POST", "/admin/v1/events", adminToken, map[string]any{"title": "T", "kind": "gig", "durationMinutes": 60})
	sh := st.do("POST", "/admin/v1/shows", adminToken, map[string]any{"eventId": ev.json(t)["eventId"], "hallId": hall,
		"startsAt": time.Now().Add(72 * time.Hour).UTC().Format(time.RFC3339), "saleStartsAt": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339),
		"currency": "INR", "prices": map[string]int64{"GOLD": 45000}})
	show := sh.json(t)["showId"].(string)
	rdb := bookingtest.Redis(t)
	path := "/api/v1/shows/" + show + "/waitlist"

	blocker, fan, other := st.guest(), st.guest(), st.guest()
	st.hold(blocker, show, "A1", "A2")
	st.do("PUT", "/api/v1/me/contact", fan, map[string]string{"email": "waiting@example.com", "language": "en"})
	if j := st.do("POST", path, fan, map[string]any{"seats": 2, "category": "GOLD"}, "Accept-Language", "hi-IN,hi;q=0.9"); j.status != 201 ||
		j.json(t)["status"] != "WAITING" || j.json(t)["position"] != float64(1) {
		t.Fatalf("join: %d %s", j.status, j.body)
	}
	st.do("POST", path, other, map[string]any{"seats": 1})
	// The queue goes on after the show sold out: paying the offer must not need an admission.
	admissiontest.SetSettings(t, rdb, show, admission.Settings{Enabled: true,
		AdmitPerSecond: 1, MaxActive: 1, TokenTTLSeconds: 60})

	// The fan's page opens the waitlist stream.
	req, _ := http.NewRequest("GET", st.base+path+"/stream", nil)
	req.Header.Set("Authorization", "Bearer "+fan)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %v %v", resp, err)
	}
	defer resp.Body.Close()
	statuses := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var e struct{ Status string }
				_ = json.Unmarshal([]byte(data), &e)
				statuses <- e.Status
			}
		}
		close(statuses)
	}()
	want := []string{"WAITING", "OFFERED"}
	for _, w := range want {
		select {
		case got := <-statuses:
			if got != w {
				t.Fatalf("stream said %s, want %s", got, w)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("stream: no %s event", w)
		}
	}

	g := st.do("GET", path, fan, nil)
	entry := g.json(t)
	offer, _ := entry["offer"].(map[string]any)
	if g.status != 200 || entry["status"] != "OFFERED" || offer == nil || len(offer["seatIds"].([]any)) != 2 {
		t.Fatalf("entry: %d %s", g.status, g.body)
	}
	bookingID := offer["bookingId"].(string)
	// The fan is told by mail too, with the seats and the deadline.
	mails := mail.Wait(2, time.Minute) // the first is the contact's code
	if len(mails) > 0 {
		mails = mails[1:]
	}
	if len(mails) == 0 || !strings.Contains(strings.ReplaceAll(string(mails[0].Data), "=\r\n", ""), bookingID) {
		t.Fatalf("no offer mail naming %s: %d mails", bookingID, len(mails))
	}
	// In the language of the page the fan joined from (Hindi), not their contact's.
	pm, _ := mails[0].Parse()
	if subject, _ := new(mime.WordDecoder).DecodeHeader(pm.Header.Get("Subject")); !strings.Contains(subject, "सीटें") {
		t.Fatalf("offer mail subject %q, want the Hindi offer", subject)
	}
	if paid := st.pay(fan, bookingID, sim.CardOK, "k1"); paid.status != 200 {
		t.Fatalf("pay the offer without admission: %d %s", paid.status, paid.body)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if e := st.do("GET", path, fan, nil).json(t); e["status"] == "ACCEPTED" {
			if _, ok := e["offer"]; ok {
				t.Fatalf("accepted entry still shows an offer: %v", e)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("entry never ACCEPTED")
		}
	}
	if d := st.do("DELETE", path, fan, nil); d.status != 200 || d.json(t)["status"] != "ACCEPTED" {
		t.Fatalf("leaving an accepted entry: %d %s, want it kept", d.status, d.body)
	}

	adm := st.do("GET", "/admin/v1/shows/"+show+"/waitlist", adminToken, nil)
	list := adm.json(t)
	entries, _ := list["entries"].([]any)
	if adm.status != 200 || len(entries) != 2 || entries[0].(map[string]any)["status"] != "ACCEPTED" ||
		entries[1].(map[string]any)["status"] != "WAITING" || entries[1].(map[string]any)["position"] != float64(1) {
		t.Fatalf("operator's waitlist: %d %s", adm.status, adm.body)
	}
	if d := st.do("DELETE", path, other, nil); d.status != 200 || d.json(t)["status"] != "LEFT" {
		t.Fatalf("leave: %d %s", d.status, d.body)
	}

	for _, tc := range []struct {
		name, method, path, tok string
		want                    int
	}{
		{"entry without token", "GET", path, "", 401},
		{"no entry", "GET", path, blocker, 404},
		{"unknown show", "GET", "/api/v1/shows/nope/waitlist", fan, 404},
		{"leave without entry", "DELETE", path, blocker, 404},
		{"operators only", "GET", "/admin/v1/shows/" + show + "/waitlist", fan, 403},
		{"operators, no token", "GET", "/admin/v1/shows/" + show + "/waitlist", "", 401},
		{"operator, unknown show", "GET", "/admin/v1/shows/nope/waitlist", adminToken, 404},
		{"stream, unknown show", "GET", "/api/v1/shows/nope/waitlist/stream", fan, 404},
	} {
		st.do(tc.method, tc.path, tc.tok, nil).problem(t, tc.want)
	}
	st.do("POST", path, fan, map[string]any{"seats": 1, "category": "DIAMOND"}).problem(t, 422)
}
