package http_test

import (
	"strings"
	"testing"

	bookinghttp "github.com/flashseat/flashseat/booking/http"
	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/shared/session"
)

// TestSessionCookie: a guest sign-up sets the fs_session cookie (HttpOnly, SameSite=Lax, Path=/, Secure only
// with COOKIE_SECURE); the cookie then authenticates /me and writes, a Bearer header wins over it, and a write
// authenticated by the cookie alone needs the CSRF header.
func TestSessionCookie(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	for _, secure := range []bool{false, true} {
		h := newHarness(t, env, func(c *bookinghttp.Config) { c.SecureCookies = secure })
		r := h.do("POST", "/api/v1/auth/guest", "", "")
		var g struct{ UserID, Token string }
		r.json(t, &g)
		set := r.header.Get("Set-Cookie")
		for _, want := range []string{session.Cookie + "=" + g.Token, "HttpOnly", "SameSite=Lax", "path=/", "expires="} {
			if !strings.Contains(strings.ToLower(set), strings.ToLower(want)) {
				t.Errorf("secure=%v: Set-Cookie %q lacks %q", secure, set, want)
			}
		}
		if got := strings.Contains(set, "secure"); got != secure {
			t.Errorf("COOKIE_SECURE=%v: Set-Cookie %q", secure, set)
		}
	}

	h := newHarness(t, env)
	var g struct{ UserID, Token string }
	h.do("POST", "/api/v1/auth/guest", "", "").json(t, &g)
	cookie := session.Cookie + "=" + g.Token
	var me struct{ UserID string }
	r := h.do("GET", "/api/v1/me", "", "", "Cookie", cookie)
	if r.json(t, &me); r.status != 200 || me.UserID != g.UserID {
		t.Fatalf("me with the cookie: %d %s, want %s", r.status, r.body, g.UserID)
	}
	if p := problemOf(t, h.do("GET", "/api/v1/me", "", "")); p.Status != 401 {
		t.Fatalf("me without a session: %d", p.Status)
	}
	// A Bearer header wins over the cookie.
	h.do("GET", "/api/v1/me", h.user("bearer-fan"), "", "Cookie", cookie).json(t, &me)
	if me.UserID != "bearer-fan" {
		t.Fatalf("bearer and cookie: me is %q", me.UserID)
	}
	// A write authenticated by the cookie alone needs X-Requested-With: flashseat.
	show := h.env.Show.ID
	p := problemOf(t, h.do("POST", "/api/v1/bookings/hold", "", holdBody(show, "A1"), "Cookie", cookie))
	if p.Status != 403 || p.Type != problem.TypeBase+problem.CSRF {
		t.Fatalf("cookie write without the header: %+v", p)
	}
	r = h.do("POST", "/api/v1/bookings/hold", "", holdBody(show, "A1"), "Cookie", cookie, session.CSRFHeader, session.CSRFValue)
	if r.status != 201 {
		t.Fatalf("cookie write with the header: %d %s", r.status, r.body)
	}
	// ... but a Bearer write does not: browsers never add that header by themselves.
	if r := h.do("POST", "/api/v1/bookings/hold", h.user("api-client"), holdBody(show, "A2"), "Cookie", cookie); r.status != 201 {
		t.Fatalf("bearer write: %d %s", r.status, r.body)
	}
	// A read with the cookie needs no header.
	var b struct{ BookingID string }
	r.json(t, &b)
	if r := h.do("GET", "/api/v1/bookings/"+b.BookingID, "", "", "Cookie", cookie); r.status != 200 {
		t.Fatalf("read with the cookie: %d %s", r.status, r.body)
	}
}
