package app

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/admission/admissiontest"
	admredis "github.com/flashseat/flashseat/shared/admission/redis"
	"github.com/flashseat/flashseat/shared/session"
	"github.com/flashseat/flashseat/shared/token"
)

func TestGate(t *testing.T) {
	t.Parallel()
	rdb := testRedis(t)
	ctx := context.Background()
	up := echoUpstream(t)
	edge := startEdge(t, map[string]string{"BOOKING_URL": up.URL})

	show, other, open := newShow(t, rdb), newShow(t, rdb), newShow(t, rdb)
	on := admission.DefaultSettings()
	on.Enabled = true
	for _, s := range []string{show, other} {
		admissiontest.SetSettings(t, rdb, s, on)
	}

	is := testIssuer(t)
	now := time.Now()
	issue := func(user, show string, at time.Time) string {
		raw, _, err := is.Issue(user, show, uuid.NewString(), at, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	stranger, _ := token.GenerateKey()
	forged, _, _ := token.NewIssuer(stranger).Issue("u1", show, "j-forged", now, time.Minute)
	valid := issue("u1", show, now)
	revokedJTI := uuid.NewString()
	revoked, exp, _ := is.Issue("u1", show, revokedJTI, now, time.Minute)
	if err := admredis.New(rdb).Release(ctx, admission.Grant{ShowID: show, JTI: revokedJTI, ExpiresAt: exp}); err != nil {
		t.Fatal(err)
	}
	u1, u2 := userToken(t, "u1"), userToken(t, "u2")
	seats := edge + "/api/v1/shows/" + show + "/seats"
	gateURL := func(show string) string { return edge + "/queue/" + show + "/gate" }
	hold := `{"showId":"` + show + `","seatIds":["A1"]}`

	tests := []struct {
		name, method, url, body string
		hdr                     map[string]string
		want                    int
	}{
		{"no token", "GET", seats, "", map[string]string{"Authorization": "Bearer " + u1}, 403},
		{"valid", "GET", seats, "", map[string]string{"Authorization": "Bearer " + u1, admission.Header: valid}, 201},
		{"valid in cookie", "GET", seats, "", map[string]string{"Authorization": "Bearer " + u1,
			"Cookie": admission.CookieName(show) + "=" + valid}, 201},
		{"valid without user token (browser)", "GET", seats, "", map[string]string{admission.Header: valid}, 201},
		{"forged", "GET", seats, "", map[string]string{"Authorization": "Bearer " + u1, admission.Header: forged}, 403},
		{"expired", "GET", seats, "", map[string]string{"Authorization": "Bearer " + u1,
			admission.Header: issue("u1", show, now.Add(-time.Hour))}, 403},
		{"wrong show", "GET", seats, "", map[string]string{"Authorization": "Bearer " + u1,
			admission.Header: issue("u1", other, now)}, 403},
		{"wrong user", "GET", seats, "", map[string]string{"Authorization": "Bearer " + u2, admission.Header: valid}, 403},
		{"revoked", "GET", seats, "", map[string]string{"Authorization": "Bearer " + u1, admission.Header: revoked}, 403},
		{"garbage", "GET", seats, "", map[string]string{"Authorization": "Bearer " + u1, admission.Header: "x.y.z"}, 403},
		{"stream needs it too", "GET", seats + "/stream", "", map[string]string{"Authorization": "Bearer " + u1}, 403},
		{"other spelling of the path", "GET", edge + "/API/V1/shows/" + show + "/Seats/", "",
			map[string]string{"Authorization": "Bearer " + u1}, 403},
		{"queue off passes", "GET", edge + "/api/v1/shows/" + open + "/seats", "", nil, 201},
		{"public show details pass", "GET", edge + "/api/v1/shows/" + show, "", nil, 201},
		{"hold without token", "POST", edge + "/api/v1/bookings/hold", hold,
			map[string]string{"Authorization": "Bearer " + u1}, 403},
		{"hold valid", "POST", edge + "/api/v1/bookings/hold", hold,
			map[string]string{"Authorization": "Bearer " + u1, admission.Header: valid}, 201},
		{"hold wrong user", "POST", edge + "/api/v1/bookings/hold", hold,
			map[string]string{"Authorization": "Bearer " + u2, admission.Header: valid}, 403},
		{"hold without user token", "POST", edge + "/api/v1/bookings/hold", hold,
			map[string]string{admission.Header: valid}, 401},
		{"hold for a show with queue off", "POST", edge + "/api/v1/bookings/hold",
			`{"showId":"` + open + `","seatIds":["A1"]}`, map[string]string{"Authorization": "Bearer " + u1}, 201},
		{"hold with a compressed body", "POST", edge + "/api/v1/bookings/hold", "\x1f\x8b garbage",
			map[string]string{"Authorization": "Bearer " + u1, "Content-Encoding": "gzip"}, 415},
		{"hold with bad JSON goes to booking", "POST", edge + "/api/v1/bookings/hold", `{"showId":`,
			map[string]string{"Authorization": "Bearer " + u1}, 201},
		{"pay without token goes to booking", "POST", edge + "/api/v1/bookings/b1/pay", `{}`,
			map[string]string{"Authorization": "Bearer " + u1}, 201},
		{"pay valid", "POST", edge + "/api/v1/bookings/b1/pay", `{}`,
			map[string]string{"Authorization": "Bearer " + u1, admission.Header: valid}, 201},
		{"pay forged", "POST", edge + "/api/v1/bookings/b1/pay", `{}`,
			map[string]string{"Authorization": "Bearer " + u1, admission.Header: forged}, 403},
		{"pay wrong user", "POST", edge + "/api/v1/bookings/b1/pay", `{}`,
			map[string]string{"Authorization": "Bearer " + u2, admission.Header: valid}, 403},
		// Revocation on pay is booking's to check, for a new attempt only: a replay of a sale that ended the
		// admission must still answer.
		{"pay revoked goes to booking", "POST", edge + "/api/v1/bookings/b1/pay", `{}`,
			map[string]string{"Authorization": "Bearer " + u1, admission.Header: revoked}, 201},
		{"pay expired", "POST", edge + "/api/v1/bookings/b1/pay", `{}`,
			map[string]string{"Authorization": "Bearer " + u1, admission.Header: issue("u1", show, now.Add(-time.Hour))}, 403},
		{"pay garbage", "POST", edge + "/api/v1/bookings/b1/pay", `{}`,
			map[string]string{"Authorization": "Bearer " + u1, admission.Header: "junk"}, 403},
		// A browser: the fs_session cookie is the user, the fs_adm_{show} cookie the admission.
		{"hold by cookies", "POST", edge + "/api/v1/bookings/hold", hold, map[string]string{
			"Cookie":           session.Cookie + "=" + u1 + "; " + admission.CookieName(show) + "=" + valid,
			session.CSRFHeader: session.CSRFValue}, 201},
		{"hold by cookies without the CSRF header", "POST", edge + "/api/v1/bookings/hold", hold, map[string]string{
			"Cookie": session.Cookie + "=" + u1 + "; " + admission.CookieName(show) + "=" + valid}, 403},
		{"queue join by cookie without the CSRF header", "POST", edge + "/queue/" + show + "/join", "", map[string]string{
			"Cookie": session.Cookie + "=" + u1}, 403},
		{"hold by cookies, another user's admission", "POST", edge + "/api/v1/bookings/hold", hold, map[string]string{
			"Cookie":           session.Cookie + "=" + u2 + "; " + admission.CookieName(show) + "=" + valid,
			session.CSRFHeader: session.CSRFValue}, 403},
		{"bearer wins over the session cookie", "POST", edge + "/api/v1/bookings/hold", hold, map[string]string{
			"Authorization": "Bearer " + u1, "Cookie": session.Cookie + "=" + u2 + "; " + admission.CookieName(show) + "=" + valid},
			201},
		{"seat map by cookies", "GET", seats, "", map[string]string{
			"Cookie": session.Cookie + "=" + u1 + "; " + admission.CookieName(show) + "=" + valid}, 201},
		// GET /queue/{id}/gate: the same decision as a status alone, for a CDN's auth_request; a browser's Accept
		// gets no redirect.
		{"gate: valid token", "GET", gateURL(show), "", map[string]string{admission.Header: valid}, 204},
		{"gate: valid cookies", "GET", gateURL(show), "", map[string]string{"Accept": "text/html",
			"Cookie": session.Cookie + "=" + u1 + "; " + admission.CookieName(show) + "=" + valid}, 204},
		{"gate: no token", "GET", gateURL(show), "", map[string]string{"Authorization": "Bearer " + u1}, 401},
		{"gate: no token, browser", "GET", gateURL(show), "", map[string]string{"Accept": "text/html"}, 401},
		{"gate: another user's token", "GET", gateURL(show), "", map[string]string{"Authorization": "Bearer " + u2,
			admission.Header: valid}, 403},
		{"gate: revoked", "GET", gateURL(show), "", map[string]string{admission.Header: revoked}, 403},
		{"gate: expired, browser", "GET", gateURL(show), "", map[string]string{"Accept": "text/html",
			"Cookie": admission.CookieName(show) + "=" + issue("u1", show, now.Add(-time.Hour))}, 403},
		{"gate: another show's token", "GET", gateURL(show), "", map[string]string{admission.Header: issue("u1", other, now)}, 403},
		{"gate: queue off", "GET", gateURL(open), "", nil, 204},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{"Accept": "application/json"}
			for k, v := range tc.hdr {
				hdr[k] = v
			}
			resp, body := do(t, tc.method, tc.url, tc.body, hdr)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tc.want, body)
			}
			switch tc.want {
			case 403:
				p := wantProblem(t, resp, body, 403, resp403Slug(body))
				if p.Type == "https://flashseat.dev/problems/queue-required" && p.Extensions["queueUrl"] == nil {
					t.Fatalf("no queueUrl: %s", body)
				}
			case 401:
				wantProblem(t, resp, body, 401, "unauthorized")
			}
		})
	}

	t.Run("refusal names the waiting room", func(t *testing.T) {
		resp, body := do(t, "GET", seats, "", map[string]string{"Accept": "application/json"})
		p := wantProblem(t, resp, body, 403, "queue-required")
		if got := p.Extensions["queueUrl"]; got != "/queue/"+show {
			t.Fatalf("queueUrl %v", got)
		}
	})
	t.Run("refusal says why", func(t *testing.T) {
		for _, tc := range []struct{ name, url, raw, reason string }{
			{"seat map, revoked", seats, revoked, "revoked"},
			{"seat map, expired", seats, issue("u1", show, now.Add(-time.Hour)), "expired"},
			{"gate, revoked", gateURL(show), revoked, "revoked"},
			{"gate, another show's", gateURL(show), issue("u1", other, now), "wrong_show"},
		} {
			resp, body := do(t, "GET", tc.url, "", map[string]string{"Accept": "application/json",
				"Authorization": "Bearer " + u1, admission.Header: tc.raw})
			p := wantProblem(t, resp, body, 403, "queue-required")
			if got := p.Extensions["reason"]; got != tc.reason {
				t.Errorf("%s: reason %v, want %q; body %s", tc.name, got, tc.reason, body)
			}
		}
	})
	t.Run("browser is redirected to the waiting room", func(t *testing.T) {
		resp, _ := do(t, "GET", edge+"/shows/"+show, "", map[string]string{"Accept": "text/html,*/*"})
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/queue/"+show {
			t.Fatalf("status %d location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
	})
	t.Run("switching the queue off lets everyone through at once", func(t *testing.T) {
		s := newShow(t, rdb)
		admissiontest.SetSettings(t, rdb, s, on)
		u := edge + "/api/v1/shows/" + s + "/seats"
		if resp, _ := do(t, "GET", u, "", nil); resp.StatusCode != 403 {
			t.Fatalf("queue on: %d", resp.StatusCode)
		}
		off := on
		off.Enabled = false
		admissiontest.SetSettings(t, rdb, s, off)
		// Pub/sub makes it immediate; the gate's one-second cache bounds it if a message is lost.
		deadline := time.Now().Add(1200 * time.Millisecond)
		for {
			resp, _ := do(t, "GET", u, "", nil)
			if resp.StatusCode == 201 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("still %d a second after the queue was switched off", resp.StatusCode)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// resp403Slug accepts either 403 slug the edge uses: queue-required (a show's waiting room) or forbidden (a token
// naming no show).
func resp403Slug(body []byte) string {
	for _, slug := range []string{"queue-required", "csrf"} {
		if strings.Contains(string(body), "/"+slug+`"`) {
			return slug
		}
	}
	return "forbidden"
}
