package e2e

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	fsclient "github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/platformtest"
	"github.com/flashseat/flashseat/shared/salereport"
)

// reportPlatform is the journeys' platform whose edge trusts X-Forwarded-For from loopback, so that a bot can come
// from an address of its own, which the operator blocks.
func reportPlatform(t *testing.T) (*platformtest.Platform, *fsclient.Client) {
	t.Helper()
	p := platformtest.Start(t, platformtest.Options{HoldTTL: 5 * time.Minute, MaxConns: 8,
		Edge: map[string]string{"QUEUE_TICK": "100ms", "TRUSTED_PROXIES": "127.0.0.0/8"}})
	c, err := fsclient.New(p.BaseURL, http.DefaultTransport, fsclient.Options{AdminToken: p.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	return p, c
}

// scriptedSale plays a small sale through the real edge and booking and returns the show and how long its fans
// took from the first join to the last admission: five fans join (each first refused for want of a proof of work,
// as the client asks without one), four are admitted; A buys A1 (PLATINUM), B is declined and cancels, C buys B2
// and C1 (GOLD) and is refunded in full by the operator, D lets a ten-second admission lapse; with admission
// paused, F joins and waits; then a bot from a blocked prefix is refused.
func scriptedSale(t *testing.T, p *platformtest.Platform, c *fsclient.Client) (show string, span time.Duration) {
	t.Helper()
	ctx := context.Background()
	show = newShow(t, c, showSpec{title: "Tughlaq " + uuid.NewString()[:6], saleIn: -time.Minute, queue: true,
		admitRate: 50})
	start := time.Now()
	fans := map[string]fsclient.Guest{}
	admissions := map[string]string{}
	join := func(names ...string) {
		t.Helper()
		for _, name := range names {
			fans[name] = guestFan(t, c)
			if q, res, err := c.Join(ctx, fans[name].Token, show, ""); err != nil || (q.Status != "waiting" && q.Status != "admitted") {
				t.Fatalf("%s joins: %+v %d %v", name, q, res.Status, err)
			}
		}
		for _, name := range names {
			admissions[name] = awaitAdmission(t, c, fans[name], show)
		}
	}
	join("A", "B", "C")
	hold := func(name string, seats ...string) string {
		t.Helper()
		b, res, err := c.Hold(ctx, fans[name].Token, admissions[name], show, seats, "")
		if err != nil || res.Status != http.StatusCreated {
			t.Fatalf("%s holds %v: %d %v", name, seats, res.Status, err)
		}
		return b.BookingID
	}
	pay := func(name, booking, method, want string) {
		t.Helper()
		b, res, err := c.Pay(ctx, fans[name].Token, admissions[name], booking, method, uuid.NewString())
		if b.Status != want && (want != "declined" || res.Status != http.StatusPaymentRequired) {
			t.Fatalf("%s pays with %s: %+v %d %v", name, method, b, res.Status, err)
		}
	}
	a := hold("A", "A1")
	pay("A", a, "pm_card_ok", "CONFIRMED")
	b := hold("B", "B1")
	pay("B", b, "pm_card_declined", "declined")
	if res, err := c.Cancel(ctx, fans["B"].Token, admissions["B"], b); err != nil || res.Status >= 300 {
		t.Fatalf("B cancels: %d %v", res.Status, err)
	}
	cb := hold("C", "B2", "C1")
	pay("C", cb, "pm_card_ok", "CONFIRMED")
	admin(t, p, "POST", "/admin/v1/bookings/"+cb+"/refund", `{}`, nil)

	// Admissions of ten seconds (the least there is) from now on, so that D's lapses within the test.
	if _, err := c.PutQueue(ctx, show, fsclient.QueueSettings{Enabled: true, AdmitPerSecond: 50, MaxActive: 50,
		TokenTTLSeconds: 10}); err != nil {
		t.Fatal(err)
	}
	join("D")
	span = time.Since(start)
	if err := c.Pause(ctx, show, true); err != nil {
		t.Fatal(err)
	}
	f := guestFan(t, c)
	if q, res, err := c.Join(ctx, f.Token, show, ""); err != nil || q.Status != "waiting" {
		t.Fatalf("F joins: %+v %d %v", q, res.Status, err)
	}

	addr := fmt.Sprintf("198.18.%d.%d", rand.IntN(256), 1+rand.IntN(254))
	admin(t, p, "POST", "/admin/v1/shows/"+show+"/blocked-prefixes", `{"prefix":"`+addr+`"}`, nil)
	bot := guestFan(t, c)
	status, body := joinFrom(t, p, bot.Token, show, addr)
	if status != http.StatusForbidden || !strings.Contains(string(body), "prefix-blocked") {
		t.Fatalf("the bot's join: %d %s", status, body)
	}
	return show, span
}

// awaitAdmission polls the fan's place until they are admitted and returns the admission token.
func awaitAdmission(t *testing.T, c *fsclient.Client, f fsclient.Guest, show string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		q, _, err := c.QueueStatus(context.Background(), f.Token, show)
		if err == nil && q.Status == "admitted" && q.AdmissionToken != "" {
			return q.AdmissionToken
		}
		if time.Now().After(deadline) {
			t.Fatalf("never admitted: %+v %v", q, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// joinFrom is a join without a proof from addr (X-Forwarded-For, which the edge trusts from loopback).
func joinFrom(t *testing.T, p *platformtest.Platform, tok, show, addr string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", p.BaseURL+"/queue/"+show+"/join", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Forwarded-For", addr)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// fetchReport reads a report (JSON or CSV, by suffix) from base with the operator token.
func fetchReport(t *testing.T, base, token, show, suffix string) []byte {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/admin/v1/shows/"+show+"/report"+suffix, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("report%s: %s %s", suffix, res.Status, b)
	}
	return b
}

func decodeReport(t *testing.T, b []byte) salereport.Report {
	t.Helper()
	var r salereport.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report: %v: %s", err, b)
	}
	return r
}

func sum(pts []salereport.Point) int64 {
	var n int64
	for _, p := range pts {
		n += p.Count
	}
	return n
}

// TestSaleReport: after a scripted sale every figure of the report is what the script did; a booking started
// afresh, with the show's keys gone from Redis, answers the same report; the CSV is one table a CSV reader takes,
// with the same figures; and the console's Report view shows it in a browser (reportInBrowser).
func TestSaleReport(t *testing.T) {
	p, c := reportPlatform(t)
	show, span := scriptedSale(t, p, c)

	// The journal writes within half a second, and D's admission lapses ten seconds after it was made: wait for
	// both, judged by the report itself.
	var r salereport.Report
	deadline := time.Now().Add(45 * time.Second)
	for {
		r = decodeReport(t, fetchReport(t, p.BaseURL, p.AdminToken, show, ""))
		if r.Funnel.Joined == 5 && r.Refusals["prefix-blocked"] == 1 && r.Abandoned.AdmittedLapsed >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the report never took in the sale: %+v", r)
		}
		time.Sleep(200 * time.Millisecond)
	}

	want := map[string]int64{
		"arrivals": 5, "admitted": 4, "holds": 3, "confirmed": 2, "refunds": 1,
		"funnel.joined": 5, "funnel.admitted": 4, "funnel.held": 3, "funnel.bought": 2,
		"abandoned.joinedNeverBought": 3, "abandoned.admittedLapsed": 1, // D (B's admission is live, F had none)
		"queueLength.end": 1, // F
		"waits.count":     4,
		"cancelled":       1, "expired": 0,
		"refusals.proof-required": 5, "refusals.prefix-blocked": 1, "refusals.kinds": 2, "bots.refused": 1,
		"bots.shadowed": 0, "payments.attempts": 3, "payments.CONFIRMED": 2, "payments.DECLINED": 1,
		"payments.breakerOpenings": 0, "revenue.PLATINUM": 90000, "revenue.GOLD": 0, "revenue.gross": 180000,
		"revenue.refunded": 90000, "revenue.net": 90000,
	}
	got := map[string]int64{
		"arrivals": sum(r.Arrivals), "admitted": sum(r.Admitted), "holds": sum(r.Holds),
		"confirmed": sum(r.Confirmed), "refunds": sum(r.Refunds),
		"funnel.joined": r.Funnel.Joined, "funnel.admitted": r.Funnel.Admitted, "funnel.held": r.Funnel.Held,
		"funnel.bought": r.Funnel.Bought, "abandoned.joinedNeverBought": r.Abandoned.JoinedNeverBought,
		"abandoned.admittedLapsed": r.Abandoned.AdmittedLapsed,
		"queueLength.end":          r.QueueLength[len(r.QueueLength)-1].Count, "waits.count": r.WaitSeconds.Count,
		"cancelled": r.Cancelled, "expired": r.Expired,
		"refusals.proof-required": r.Refusals["proof-required"], "refusals.prefix-blocked": r.Refusals["prefix-blocked"],
		"refusals.kinds": int64(len(r.Refusals)), "bots.refused": r.Bots.Refused, "bots.shadowed": r.Bots.Shadowed,
		"payments.attempts": r.Payments.Attempts, "payments.CONFIRMED": r.Payments.Outcomes["CONFIRMED"],
		"payments.DECLINED": r.Payments.Outcomes["DECLINED"], "payments.breakerOpenings": r.Payments.BreakerOpenings,
		"revenue.PLATINUM": r.Revenue.ByCategory["PLATINUM"], "revenue.GOLD": r.Revenue.ByCategory["GOLD"],
		"revenue.gross": r.Revenue.Gross, "revenue.refunded": r.Revenue.Refunded, "revenue.net": r.Revenue.Net,
	}
	if !reflect.DeepEqual(got, want) {
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: got %d, want %d", k, got[k], v)
			}
		}
	}
	w := r.WaitSeconds
	if !(0 <= w.P50 && w.P50 <= w.P90 && w.P90 <= w.P99 && w.P99 <= w.Max && w.Max <= span.Seconds()) {
		t.Errorf("waits %+v: not ordered, or longer than the %s the fans took to be admitted", w, span)
	}
	var bars int64
	for _, b := range w.Histogram {
		bars += b.Count
	}
	if bars != 4 {
		t.Errorf("the wait histogram holds %d fans, want 4: %+v", bars, w.Histogram)
	}
	if n := len(r.Arrivals); n == 0 || n != len(r.QueueLength) || n != len(r.Confirmed) ||
		!r.Arrivals[n-1].T.Equal(r.To) || !r.Arrivals[0].T.Equal(r.From) {
		t.Errorf("the series do not cover every minute from %s to %s alike: %d arrivals, %d queue, %d confirmed",
			r.From, r.To, len(r.Arrivals), len(r.QueueLength), len(r.Confirmed))
	}

	// Redis forgets the show and a booking that starts afresh answers: the same report.
	wipeShow(t, p, show)
	again := decodeReport(t, fetchReport(t, p.StartBooking(t), p.AdminToken, show, ""))
	again.GeneratedAt = r.GeneratedAt
	if !reflect.DeepEqual(again, r) {
		a, _ := json.Marshal(again)
		b, _ := json.Marshal(r)
		t.Errorf("after a restart with Redis wiped the report changed:\n got %s\nwant %s", a, b)
	}

	// The CSV: one table of figure, key and value.
	rows, err := csv.NewReader(bytes.NewReader(fetchReport(t, p.BaseURL, p.AdminToken, show, ".csv"))).ReadAll()
	if err != nil {
		t.Fatalf("the CSV does not parse: %v", err)
	}
	if len(rows) == 0 || !reflect.DeepEqual(rows[0], []string{"figure", "key", "value"}) {
		t.Fatalf("the CSV's header: %v", rows[:min(1, len(rows))])
	}
	cell := map[string]string{}
	var csvArrivals int64
	for _, row := range rows[1:] {
		cell[row[0]+"/"+row[1]] = row[2]
		if row[0] == "arrivals" {
			var n int64
			fmt.Sscan(row[2], &n)
			csvArrivals += n
		}
	}
	for k, v := range map[string]string{"funnel/bought": "2", "refusals/prefix-blocked": "1", "revenue/PLATINUM": "90000",
		"abandoned/joinedNeverBought": "3", "payments/DECLINED": "1", "show/id": show,
		"waitSeconds/max": fmt.Sprintf("%.3f", r.WaitSeconds.Max)} {
		if cell[k] != v {
			t.Errorf("CSV %s: got %q, want %q", k, cell[k], v)
		}
	}
	if csvArrivals != 5 {
		t.Errorf("CSV arrivals add up to %d, want 5", csvArrivals)
	}
	if !testing.Short() {
		reportInBrowser(t, p, show)
	}
}

// wipeShow deletes every key of the show from the platform's Redis, as a Redis that lost its data has none.
func wipeShow(t *testing.T, p *platformtest.Platform, show string) {
	t.Helper()
	opt, err := goredis.ParseURL(p.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	ctx := context.Background()
	var keys []string
	iter := rdb.Scan(ctx, 0, "*"+show+"*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if len(keys) == 0 {
		t.Fatal("no key of the show in Redis: nothing was wiped")
	}
	if err := rdb.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
}
