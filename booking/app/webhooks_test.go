package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking/payment"
	"github.com/flashseat/flashseat/booking/webhook"
)

// TestWebhooksOverHTTP: an operator registers an endpoint for a show; a hold in that show reaches it through the
// whole pipeline (outbox, relay, stream, the webhooks consumer group, the sender), signed with the endpoint's
// secret; the delivery is listed, replayed and received again; the endpoint is deleted. Bad input is a 4xx.
func TestWebhooksOverHTTP(t *testing.T) {
	t.Parallel()
	c := client{t: t, base: startBooking(t, map[string]string{"EVENTS_RELAY_INTERVAL": "20ms"}, nil)}
	show := seedShow(c)
	var mu sync.Mutex
	var got []map[string]any
	var secret string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if err := payment.VerifySignature(body, r.Header.Get(webhook.SignatureHeader), secret, time.Minute, time.Now()); err != nil {
			t.Errorf("delivery signature: %v", err)
		}
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		got = append(got, m)
	}))
	defer recv.Close()

	var ep struct {
		ID, URL, ShowID, Secret string
		Events                  []string
	}
	mu.Lock()
	if st := c.call("POST", "/admin/v1/webhooks", testAdmin, map[string]any{"url": recv.URL, "showId": show,
		"events": []string{"booking.held"}}, &ep); st != 201 || ep.Secret == "" || ep.ShowID != show {
		t.Fatalf("register: %d %+v", st, ep)
	}
	secret = ep.Secret
	mu.Unlock()
	var fan struct{ Token string }
	c.call("POST", "/api/v1/auth/guest", "", nil, &fan)
	var b struct{ BookingID string }
	if st := c.call("POST", "/api/v1/bookings/hold", fan.Token, map[string]any{"showId": show, "seatIds": []string{"A1"}}, &b); st != 201 {
		t.Fatalf("hold: %d", st)
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }
	for deadline := time.Now().Add(10 * time.Second); count() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no delivery")
		}
	}
	mu.Lock()
	first := got[0]
	mu.Unlock()
	if first["type"] != "booking.held" || first["subject"] != b.BookingID || first["showId"] != show {
		t.Fatalf("delivered %v", first)
	}

	var list struct{ Webhooks []map[string]any }
	if st := c.call("GET", "/admin/v1/webhooks", testAdmin, nil, &list); st != 200 || len(list.Webhooks) != 1 ||
		list.Webhooks[0]["secret"] != nil {
		t.Fatalf("list: %d %v (the secret is shown once only)", st, list)
	}
	var ds struct{ Deliveries []map[string]any }
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c.call("GET", "/admin/v1/webhooks/"+ep.ID+"/deliveries", testAdmin, nil, &ds)
		if len(ds.Deliveries) == 1 && ds.Deliveries[0]["status"] == "DELIVERED" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries %v, want one DELIVERED", ds)
		}
	}
	// The operator rolls the secret; the receiver moves to the new one at once, which the grace period allows:
	// the replay below carries both signatures.
	var rolled struct{ Secret, PreviousSecretExpiresAt string }
	if st := c.call("POST", "/admin/v1/webhooks/"+ep.ID+"/roll-secret", testAdmin, map[string]any{"graceSeconds": 3600},
		&rolled); st != 200 || rolled.Secret == "" || rolled.Secret == ep.Secret || rolled.PreviousSecretExpiresAt == "" {
		t.Fatalf("roll secret: %d %+v", st, rolled)
	}
	mu.Lock()
	secret = rolled.Secret
	mu.Unlock()
	var replayed map[string]any
	if st := c.call("POST", "/admin/v1/webhooks/"+ep.ID+"/deliveries/"+ds.Deliveries[0]["id"].(string)+"/replay",
		testAdmin, nil, &replayed); st != 202 || replayed["status"] != "PENDING" {
		t.Fatalf("replay: %d %v", st, replayed)
	}
	for deadline := time.Now().Add(10 * time.Second); count() < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("replay not delivered")
		}
	}
	if st := c.call("DELETE", "/admin/v1/webhooks/"+ep.ID, testAdmin, nil, nil); st != 204 {
		t.Fatalf("delete: %d", st)
	}

	for _, tc := range []struct {
		name, method, path, auth string
		body                     any
		want                     int
	}{
		{"no token", "GET", "/admin/v1/webhooks", "", nil, 401},
		{"fan token", "GET", "/admin/v1/webhooks", fan.Token, nil, 403},
		{"no url", "POST", "/admin/v1/webhooks", testAdmin, map[string]any{}, 400},
		{"bad url", "POST", "/admin/v1/webhooks", testAdmin, map[string]any{"url": "ftp://x"}, 422},
		{"unknown show", "POST", "/admin/v1/webhooks", testAdmin, map[string]any{"url": "https://x.example", "showId": "nope"}, 404},
		{"unknown event", "POST", "/admin/v1/webhooks", testAdmin, map[string]any{"url": "https://x.example", "events": []string{"x"}}, 422},
		{"events not a list", "POST", "/admin/v1/webhooks", testAdmin, map[string]any{"url": "https://x.example", "events": "x"}, 400},
		{"delete again", "DELETE", "/admin/v1/webhooks/" + ep.ID, testAdmin, nil, 404},
		{"deliveries of nothing", "GET", "/admin/v1/webhooks/we_nope/deliveries", testAdmin, nil, 404},
		{"bad limit", "GET", "/admin/v1/webhooks/" + ep.ID + "/deliveries?limit=0", testAdmin, nil, 400},
		{"roll of nothing", "POST", "/admin/v1/webhooks/we_nope/roll-secret", testAdmin, nil, 404},
		{"roll with too long a grace", "POST", "/admin/v1/webhooks/" + ep.ID + "/roll-secret", testAdmin, map[string]any{"graceSeconds": 700000}, 422},
		{"roll with a negative grace", "POST", "/admin/v1/webhooks/" + ep.ID + "/roll-secret", testAdmin, map[string]any{"graceSeconds": -1}, 422},
		{"roll with a grace not a number", "POST", "/admin/v1/webhooks/" + ep.ID + "/roll-secret", testAdmin, map[string]any{"graceSeconds": "1h"}, 400},
		{"replay of nothing", "POST", "/admin/v1/webhooks/" + ep.ID + "/deliveries/whd_nope/replay", testAdmin, nil, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p struct{ Status int }
			if st := c.call(tc.method, tc.path, tc.auth, tc.body, &p); st != tc.want || p.Status != tc.want {
				t.Fatalf("got %d (problem %d), want %d", st, p.Status, tc.want)
			}
		})
	}
}

// TestWebhookPrivateURLRefused: by default (WEBHOOK_ALLOW_PRIVATE unset) an endpoint on a loopback, private,
// link-local or unspecified address, however the address is spelt (inet_aton's decimal, octal, hex and short
// forms, IPv4 inside IPv6), is refused when saved with a 422 problem naming the url, and a non-http(s) URL too.
func TestWebhookPrivateURLRefused(t *testing.T) {
	t.Parallel()
	c := client{t: t, base: startBooking(t, map[string]string{"WEBHOOK_ALLOW_PRIVATE": "false"}, nil)}
	for _, url := range []string{"http://127.0.0.1:9/h", "http://localhost/h", "http://169.254.169.254/latest",
		"http://10.0.0.7/h", "http://[::1]/h", "file:///etc/passwd",
		"http://2130706433/", "http://127.1/", "http://0x7f000001/", "http://0177.0.0.1/", "http://0x7f.0.0.1/",
		"http://0x7F.1/", "http://127.0.1/", "http://017700000001/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/",
		"http://[::127.0.0.1]/", "http://[64:ff9b::a9fe:a9fe]/", "http://0/", "http://0.0.0.0/", "http://[::]/",
		"http://10.1/", "http://167772161/", "http://192.168.1.1./", "http://0xc0.0xa8.1.1/", "http://3232235777/",
		"http://169.254.169.254.", "http://2852039166/", "http://[fe80::1%25eth0]/", "http://[fc00::1]/",
		"http://[fd12:3456::1]/", "http://[fec0::1]/", "http://172.16.0.1/", "http://100.64.0.1/",
		"http://1.2.3.4.5/", "http://08.1/", "http://0x1g/"} {
		var p struct {
			Status int
			Detail string
		}
		if st := c.call("POST", "/admin/v1/webhooks", testAdmin, map[string]any{"url": url}, &p); st != 422 || p.Status != 422 ||
			!strings.Contains(p.Detail, "url") {
			t.Errorf("register %s: %d (problem %+v), want 422 naming the url", url, st, p)
		}
	}
	for _, url := range []string{"https://hooks.example.com/h", "http://134744072/", "http://8.8.8.8/h",
		"https://0x.example/h", "https://1.2.3.example/h", "http://[2001:4860:4860::8888]/h"} {
		var ep struct{ ID string }
		if st := c.call("POST", "/admin/v1/webhooks", testAdmin, map[string]any{"url": url}, &ep); st != 201 {
			t.Errorf("a public URL %s: %d, want 201", url, st)
		}
	}
}
