package e2e

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"
)

const adminToken = "adm_e2e_e2e_e2e_e2e_e2e"

// operator is a browser-like client of the console: a cookie jar, and the CSRF header on every call.
type operator struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newOperator(t *testing.T, base string) *operator {
	jar, _ := cookiejar.New(nil)
	return &operator{t: t, base: base, c: &http.Client{Jar: jar, Timeout: 10 * time.Second}}
}

func (o *operator) do(method, path, body string, hdr map[string]string) (int, http.Header, []byte) {
	o.t.Helper()
	var r *strings.Reader
	if body != "" {
		r = strings.NewReader(body)
	} else {
		r = strings.NewReader("")
	}
	req, _ := http.NewRequest(method, o.base+path, r)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := o.c.Do(req)
	if err != nil {
		o.t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
	return resp.StatusCode, resp.Header, []byte(b.String())
}

var csrf = map[string]string{"X-Requested-With": "flashseat"}

// TestConsoleSession: the operator token is exchanged for a session cookie (HttpOnly, not the token), which then
// authenticates the operator API through the edge; CSRF, sign-out on every replica, wrong tokens and the sign-in
// limit behave.
func TestConsoleSession(t *testing.T) {
	t.Parallel()
	p := start(t, map[string]string{"ADMIN_TOKEN": adminToken})
	o := newOperator(t, p.edge)

	if s, _, b := o.do("GET", "/admin", "", nil); s != 200 || !strings.Contains(string(b), `type="password"`) {
		t.Fatalf("page: %d %s", s, b)
	}
	if s, _, _ := o.do("GET", "/admin/v1/stats", "", nil); s != 401 {
		t.Fatalf("stats without session: %d", s)
	}
	if s, _, b := o.do("POST", "/admin/session", `{"token":"wrong"}`, csrf); s != 401 || !strings.Contains(string(b), "problem") && !strings.Contains(string(b), "unauthorized") {
		t.Fatalf("wrong token: %d %s", s, b)
	}
	if s, _, _ := o.do("POST", "/admin/session", `{"token":"`+adminToken+`"}`, nil); s != 403 {
		t.Fatalf("sign-in without the CSRF header: %d", s)
	}
	s, h, b := o.do("POST", "/admin/session", `{"token":"`+adminToken+`","operator":"Asha"}`, csrf)
	if s != 201 {
		t.Fatalf("sign in: %d %s", s, b)
	}
	cookie := h.Get("Set-Cookie")
	if !strings.Contains(cookie, "fs_console=") || !strings.Contains(cookie, "HttpOnly") ||
		strings.Contains(cookie, adminToken) || !strings.Contains(strings.ToLower(cookie), "path=/admin") {
		t.Fatalf("cookie %q", cookie)
	}
	if s, _, b := o.do("GET", "/admin/session", "", nil); s != 200 || !strings.Contains(string(b), `"operator":"Asha"`) {
		t.Fatalf("whoami: %d %s", s, b)
	}
	// The session reaches booking's and the waiting room's operator routes.
	if s, _, b := o.do("GET", "/admin/v1/stats", "", nil); s != 200 || !strings.Contains(string(b), p.show) {
		t.Fatalf("stats with session: %d %s", s, b)
	}
	if s, _, b := o.do("GET", "/admin/v1/shows/"+p.show+"/queue", "", nil); s != 200 {
		t.Fatalf("queue settings with session: %d %s", s, b)
	}
	// A change without the CSRF header is refused and changes nothing.
	if s, _, b := o.do("PUT", "/admin/v1/shows/"+p.show+"/queue", `{"enabled":true}`, nil); s != 403 || !strings.Contains(string(b), "csrf") {
		t.Fatalf("put without CSRF header: %d %s", s, b)
	}
	if s, _, b := o.do("PUT", "/admin/v1/shows/"+p.show+"/queue", `{"enabled":true}`, csrf); s != 200 {
		t.Fatalf("put with session: %d %s", s, b)
	}
	// The bearer token keeps working for scripts.
	if s, b := send(t, "GET", p.edge+"/admin/v1/stats", "", map[string]string{"Authorization": "Bearer " + adminToken}); s != 200 {
		t.Fatalf("bearer: %d %s", s, b)
	}
	// The live stream sends figures with the show in it.
	live := liveFigures(t, o)
	if !strings.Contains(live, p.show) || !strings.Contains(live, `"waiting"`) {
		t.Fatalf("live figures: %s", live)
	}
	// The same figures once, as JSON, for a console whose stream cannot get through.
	if s, h, b := o.do("GET", "/admin/figures", "", nil); s != 200 || h.Get("Content-Type") != "application/json" ||
		h.Get("Cache-Control") != "no-store" || !strings.Contains(string(b), p.show) || !strings.Contains(string(b), `"waiting"`) {
		t.Fatalf("figures: %d %s %s", s, h.Get("Content-Type"), b)
	}

	// Signing out ends the session, even for a copy of the cookie (the sign-out is in Redis, which every replica reads).
	stolen := o.c.Jar.Cookies(mustURL(t, p.edge+"/admin"))
	if s, _, _ := o.do("DELETE", "/admin/session", "", csrf); s != 204 {
		t.Fatalf("sign out: %d", s)
	}
	o2 := newOperator(t, p.edge)
	o2.c.Jar.SetCookies(mustURL(t, p.edge+"/admin"), stolen)
	if s, _, _ := o2.do("GET", "/admin/v1/stats", "", nil); s != 401 {
		t.Fatalf("stats after sign-out with the old cookie: %d", s)
	}
	// A forged cookie is no session.
	o3 := newOperator(t, p.edge)
	o3.c.Jar.SetCookies(mustURL(t, p.edge+"/admin"), []*http.Cookie{{Name: "fs_console", Value: "v1.x.9999999999.QQ.forged", Path: "/admin"}})
	if s, _, _ := o3.do("GET", "/admin/v1/stats", "", nil); s != 401 {
		t.Fatalf("forged cookie: %d", s)
	}
}

// TestConsoleSignInBadInput: every kind of bad sign-in gets a 4xx problem, and guessing is rate limited.
func TestConsoleSignInBadInput(t *testing.T) {
	t.Parallel()
	p := start(t, map[string]string{"ADMIN_TOKEN": adminToken})
	o := newOperator(t, p.edge)
	for _, tc := range []struct {
		name, body string
		want       int
	}{
		{"not json", `{"token":`, 400},
		{"bad name", `{"token":"` + adminToken + `","operator":"<script>"}`, 422},
		{"long name", `{"token":"` + adminToken + `","operator":"` + strings.Repeat("a", 41) + `"}`, 422},
		{"empty token", `{"token":""}`, 401},
		{"misspelt member", `{"token":"` + adminToken + `","operater":"Asha"}`, 422},
	} {
		if s, h, b := o.do("POST", "/admin/session", tc.body, csrf); s != tc.want || !strings.HasPrefix(h.Get("Content-Type"), "application/problem+json") {
			t.Fatalf("%s: %d %s %s", tc.name, s, h.Get("Content-Type"), b)
		}
	}
	if s, _, _ := o.do("DELETE", "/admin/session", "", csrf); s != 401 {
		t.Fatalf("sign out without a session: %d", s)
	}
	if s, _, _ := o.do("GET", "/admin/live", "", nil); s != 401 {
		t.Fatalf("live without a session: %d", s)
	}
	if s, h, _ := o.do("GET", "/admin/figures", "", nil); s != 401 || !strings.HasPrefix(h.Get("Content-Type"), "application/problem+json") {
		t.Fatalf("figures without a session: %d %s", s, h.Get("Content-Type"))
	}
	if s, _, _ := o.do("GET", "/admin/assets/0ld/nope.js", "", nil); s != 404 {
		t.Fatalf("unknown asset: %d", s)
	}
	limited := false
	for i := 0; i < 12 && !limited; i++ {
		s, h, _ := o.do("POST", "/admin/session", `{"token":"guess"}`, csrf)
		limited = s == 429 && h.Get("Retry-After") != ""
	}
	if !limited {
		t.Fatal("twelve wrong sign-ins in a row were never rate limited")
	}
}

func liveFigures(t *testing.T, o *operator) string {
	t.Helper()
	req, _ := http.NewRequest("GET", o.base+"/admin/live", nil)
	c := *o.c
	c.Timeout = 10 * time.Second
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("live: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var v map[string]any
			if err := json.Unmarshal([]byte(data), &v); err != nil {
				t.Fatalf("live data %q: %v", data, err)
			}
			return data
		}
	}
	t.Fatalf("live stream ended: %v", sc.Err())
	return ""
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestShowGauges: the per-show gauges are on the operations addresses only, for shows with an open sale; the
// stores' gauges and the Redis pools' series beside them.
func TestShowGauges(t *testing.T) {
	t.Parallel()
	p := start(t, map[string]string{"ADMIN_TOKEN": adminToken})
	if s, b := send(t, "GET", p.bookingOps+"/metrics", "", nil); s != 200 ||
		!strings.Contains(string(b), `booking_show_seats_available{show="`+p.show+`"}`) ||
		!strings.Contains(string(b), `booking_show_seats_sold{show="`+p.show+`"} 0`) ||
		!strings.Contains(string(b), `booking_store_up{store="postgres"} 1`) ||
		!strings.Contains(string(b), `booking_store_up{store="redis"} 1`) ||
		!strings.Contains(string(b), `booking_redis_pool_connections{pool="main"}`) {
		t.Fatalf("booking metrics: %d %s", s, b)
	}
	// The edge gathers the figures once scraped; a second scrape a moment later carries them.
	want := `waitroom_show_waiting{show="` + p.show + `"} 0`
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, b := send(t, "GET", p.edgeOps+"/metrics", "", nil)
		if s == 200 && strings.Contains(string(b), want) && strings.Contains(string(b), "waitroom_show_admitted_total{show=") &&
			strings.Contains(string(b), `edge_store_up{store="redis"} 1`) &&
			strings.Contains(string(b), `edge_redis_pool_timeouts_total{pool="main"}`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("edge metrics lack %s: %d %s", want, s, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// A closed sale's series go away.
	if s, b := send(t, "POST", p.edge+"/admin/v1/shows/"+p.show+"/close", "", map[string]string{"Authorization": "Bearer " + adminToken}); s != 200 {
		t.Fatalf("close: %d %s", s, b)
	}
	if _, b := send(t, "GET", p.bookingOps+"/metrics", "", nil); strings.Contains(string(b), `show="`+p.show+`"`) {
		t.Fatalf("a closed sale is still exported: %s", b)
	}
	if s, b := send(t, "GET", p.edge+"/metrics", "", nil); strings.Contains(string(b), "booking_show_seats") {
		t.Fatalf("the public port serves metrics: %d", s)
	}
}
