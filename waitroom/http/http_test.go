package http_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/r3labs/sse/v2"
	goredis "github.com/redis/go-redis/v9"
	"gopkg.in/cenkalti/backoff.v1"

	edgehttp "github.com/flashseat/flashseat/edge/http"
	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/audit"
	"github.com/flashseat/flashseat/shared/infra/redistest"
	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/shared/session"
	"github.com/flashseat/flashseat/shared/token"
	"github.com/flashseat/flashseat/waitroom"
	wrhttp "github.com/flashseat/flashseat/waitroom/http"
	"github.com/flashseat/flashseat/waitroom/internal/wrtest"
	wrredis "github.com/flashseat/flashseat/waitroom/redis"
)

const adminToken = "test-admin-token"

// edgeApp is the edge's fiber application, as the waiting room is served in production: its middleware, and its
// error handler rendering what the waiting room's handlers return.
func edgeApp() *fiber.App {
	return edgehttp.New(edgehttp.Config{
		Proxy:    edgehttp.ProxyConfig{Target: &url.URL{Scheme: "http", Host: "127.0.0.1:1"}},
		Registry: prometheus.NewRegistry(),
		Log:      slog.New(slog.DiscardHandler),
	}).App
}

var userSecret = []byte("0123456789abcdef0123456789abcdef")

var guestIssuer, _ = token.NewUserIssuer(userSecret)

// server is a waiting room served by fiber on a loopback port, with its admission loop running, as the edge
// mounts it.
type server struct {
	base   string
	rdb    goredis.UniversalClient
	svc    *waitroom.Service
	users  *token.UserIssuer
	issuer *token.Issuer
	app    *fiber.App

	mu    sync.Mutex
	shows []string
}

func redisClient(t testing.TB) goredis.UniversalClient { return redistest.New(t).Client }

func newServer(t testing.TB, opt waitroom.Options, extra func(app *fiber.App)) *server {
	t.Helper()
	k, err := token.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return newReplica(t, opt, token.NewIssuer(k), extra)
}

// newReplica is one edge replica's waiting room; replicas share Redis and the admission key.
func newReplica(t testing.TB, opt waitroom.Options, is *token.Issuer, extra func(app *fiber.App)) *server {
	t.Helper()
	rdb := redisClient(t)
	ui, err := token.NewUserIssuer(userSecret)
	if err != nil {
		t.Fatal(err)
	}
	svc := wrtest.Service(t, wrredis.New(rdb), rdb, is, opt)
	h := wrhttp.New(wrhttp.Config{Service: svc, Users: token.NewUserVerifier(userSecret, nil, 0), Issuer: is,
		AdminToken: adminToken, Audit: audit.New(wrtest.Database(t)), Settings: wrtest.Keeper(t, rdb)})
	app := edgeApp()
	h.Mount(app)
	if extra != nil {
		extra(app)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = svc.Run(ctx) }()
	s := &server{base: "http://" + ln.Addr().String(), rdb: rdb, svc: svc, users: ui, issuer: is, app: app}
	t.Cleanup(func() {
		h.Close()
		_ = app.ShutdownWithTimeout(2 * time.Second)
		cancel()
		<-done
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, show := range s.shows {
			rdb.Del(context.Background(), wrredis.Keys(show)...)
		}
	})
	return s
}

func (s *server) show(t testing.TB, rate float64, maxActive int) string {
	t.Helper()
	show := "h-" + uuid.NewString()[:13]
	s.mu.Lock()
	s.shows = append(s.shows, show) // deleted once the server's admission loop has stopped
	s.mu.Unlock()
	body := fmt.Sprintf(`{"enabled":true,"admitPerSecond":%v,"maxActive":%d,"tokenTtlSeconds":600}`, rate, maxActive)
	res, _ := s.do(t, "PUT", "/admin/v1/shows/"+show+"/queue", "Bearer "+adminToken, body)
	if res.StatusCode != 200 {
		t.Fatalf("put queue: %d", res.StatusCode)
	}
	return show
}

func (s *server) user(t testing.TB, id string) string {
	t.Helper()
	raw, err := s.users.Issue(id, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func (s *server) do(t testing.TB, method, path, auth, body string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

type state struct {
	Status         string    `json:"status"`
	Position       int64     `json:"position"`
	EtaSeconds     int64     `json:"etaSeconds"`
	AdmissionToken string    `json:"admissionToken"`
	ExpiresAt      time.Time `json:"expiresAt"`
}

func (s *server) join(t testing.TB, show, user string) (state, *http.Response) {
	t.Helper()
	res, b := s.do(t, "POST", "/queue/"+show+"/join", "Bearer "+s.user(t, user), "")
	var st state
	if res.StatusCode != 200 || json.Unmarshal(b, &st) != nil {
		t.Fatalf("join %s: %d %s", user, res.StatusCode, b)
	}
	return st, res
}

// TestSessionCookieInQueue: the fs_session cookie every page shares authenticates join, status and the stream; a
// join it authenticates needs the CSRF header; a Bearer header wins over it.
func TestSessionCookieInQueue(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{Tick: 50 * time.Millisecond}, nil)
	show := s.show(t, 0.001, 100)
	s.join(t, show, "ahead")
	cookie := session.Cookie + "=" + s.user(t, "cookie-fan")
	res, b := s.do(t, "POST", "/queue/"+show+"/join", "", "", "Cookie", cookie)
	if res.StatusCode != 403 || res.Header.Get("Content-Type") != problem.ContentType ||
		!strings.Contains(string(b), problem.TypeBase+problem.CSRF) {
		t.Fatalf("cookie join without the CSRF header: %d %s", res.StatusCode, b)
	}
	var st state
	res, b = s.do(t, "POST", "/queue/"+show+"/join", "", "", "Cookie", cookie, session.CSRFHeader, session.CSRFValue)
	if res.StatusCode != 200 || json.Unmarshal(b, &st) != nil || st.Position != 2 {
		t.Fatalf("cookie join: %d %s", res.StatusCode, b)
	}
	for _, c := range res.Cookies() {
		if c.Name == "fs_queue_user" {
			t.Fatal("join still sets the old fs_queue_user cookie")
		}
	}
	res, b = s.do(t, "GET", "/queue/"+show+"/status", "", "", "Cookie", cookie)
	if res.StatusCode != 200 || json.Unmarshal(b, &st) != nil || st.Position != 2 {
		t.Fatalf("cookie status: %d %s", res.StatusCode, b)
	}
	// The Bearer header wins: "ahead" is first.
	res, b = s.do(t, "GET", "/queue/"+show+"/status", "Bearer "+s.user(t, "ahead"), "", "Cookie", cookie)
	if json.Unmarshal(b, &st) != nil || st.Position != 1 {
		t.Fatalf("bearer and cookie: %d %s", res.StatusCode, b)
	}
	// The page's EventSource sends only the cookie.
	req, _ := http.NewRequest("GET", s.base+"/queue/"+show+"/events", nil)
	req.Header.Set("Cookie", cookie)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stream, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	line, _ := bufio.NewReader(stream.Body).ReadString('\n')
	if stream.StatusCode != 200 || !strings.HasPrefix(stream.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("cookie stream: %d %q", stream.StatusCode, line)
	}
}

func TestJoinStatusAndPolling(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{Tick: 50 * time.Millisecond}, nil)
	show := s.show(t, 5, 100)
	for i := range 3 {
		st, res := s.join(t, show, "p"+strconv.Itoa(i))
		if st.Status != "waiting" || st.Position < 1 {
			t.Fatalf("join: %+v", st)
		}
		if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
			t.Fatalf("join Cache-Control %q", cc)
		}
	}
	// Poll until admitted: Retry-After while waiting, then the token and the admission cookie.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		res, b := s.do(t, "GET", "/queue/"+show+"/status", "Bearer "+s.user(t, "p2"), "")
		var st state
		if res.StatusCode != 200 || json.Unmarshal(b, &st) != nil {
			t.Fatalf("status: %d %s", res.StatusCode, b)
		}
		if st.Status == "waiting" {
			if res.Header.Get("Retry-After") == "" {
				t.Fatal("waiting status without Retry-After")
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if st.Status != "admitted" || st.AdmissionToken == "" || st.ExpiresAt.IsZero() {
			t.Fatalf("status: %+v", st)
		}
		var cookie *http.Cookie
		for _, c := range res.Cookies() {
			if c.Name == admission.CookieName(show) {
				cookie = c
			}
		}
		if cookie == nil || cookie.Value != st.AdmissionToken || !cookie.HttpOnly || cookie.Path != "/" ||
			cookie.SameSite != http.SameSiteLaxMode {
			t.Fatalf("admission cookie: %+v", cookie)
		}
		// Status again: the same token.
		_, b = s.do(t, "GET", "/queue/"+show+"/status", "Bearer "+s.user(t, "p2"), "")
		var again state
		_ = json.Unmarshal(b, &again)
		if again.AdmissionToken != st.AdmissionToken {
			t.Fatal("a second status returned another token")
		}
		return
	}
	t.Fatal("never admitted")
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{}, nil)
	show := s.show(t, 5, 100)
	tests := []struct {
		name, method, path, auth, body string
		want                           int
	}{
		{"join without token", "POST", "/queue/" + show + "/join", "", "", 401},
		{"join with junk token", "POST", "/queue/" + show + "/join", "Bearer junk", "", 401},
		{"status before join", "GET", "/queue/" + show + "/status", "Bearer " + s.user(t, "nobody"), "", 404},
		{"join unknown show", "POST", "/queue/nope-" + show + "/join", "Bearer " + s.user(t, "u"), "", 404},
		{"bad show id", "POST", "/queue/" + strings.Repeat("x", 200) + "/join", "Bearer " + s.user(t, "u"), "", 400},
		{"events without token", "GET", "/queue/" + show + "/events", "", "", 401},
		{"admin without token", "GET", "/admin/v1/shows/" + show + "/queue", "", "", 401},
		{"admin with a user token", "GET", "/admin/v1/shows/" + show + "/queue", "Bearer " + s.user(t, "u"), "", 403},
		{"admin bad JSON", "PUT", "/admin/v1/shows/" + show + "/queue", "Bearer " + adminToken, "{", 400},
		{"admin wrong type", "PUT", "/admin/v1/shows/" + show + "/queue", "Bearer " + adminToken, `{"maxActive":"x"}`, 400},
		{"admin negative rate", "PUT", "/admin/v1/shows/" + show + "/queue", "Bearer " + adminToken, `{"admitPerSecond":-1}`, 422},
		{"admin zero capacity", "PUT", "/admin/v1/shows/" + show + "/queue", "Bearer " + adminToken, `{"maxActive":0}`, 422},
		{"admin null body", "PUT", "/admin/v1/shows/" + show + "/queue", "Bearer " + adminToken, `null`, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, b := s.do(t, tc.method, tc.path, tc.auth, tc.body)
			if res.StatusCode != tc.want {
				t.Fatalf("got %d %s, want %d", res.StatusCode, b, tc.want)
			}
			if tc.want >= 400 && res.Header.Get("Content-Type") != problem.ContentType {
				t.Fatalf("error content type %q", res.Header.Get("Content-Type"))
			}
		})
	}
}

func TestAdminSettings(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{}, nil)
	show := s.show(t, 5, 100)
	s.join(t, show, "a1")
	s.join(t, show, "a2")
	res, b := s.do(t, "PUT", "/admin/v1/shows/"+show+"/queue", "Bearer "+adminToken, `{"admitPerSecond":2.5,"maxActive":7}`)
	if res.StatusCode != 200 {
		t.Fatalf("put: %d %s", res.StatusCode, b)
	}
	res, b = s.do(t, "GET", "/admin/v1/shows/"+show+"/queue", "Bearer "+adminToken, "")
	var got struct {
		admission.Settings
		waitroom.Counts
	}
	if res.StatusCode != 200 || json.Unmarshal(b, &got) != nil {
		t.Fatalf("get: %d %s", res.StatusCode, b)
	}
	if !got.Enabled || got.AdmitPerSecond != 2.5 || got.MaxActive != 7 || got.TokenTTLSeconds != 600 ||
		got.Waiting+got.Active != 2 {
		t.Fatalf("get: %s", b)
	}
	for _, k := range []string{`"waiting"`, `"active"`, `"admittedTotal"`} {
		if !strings.Contains(string(b), k) {
			t.Fatalf("GET lacks %s: %s", k, b)
		}
	}
	// Switching the queue off closes it for fans.
	s.do(t, "PUT", "/admin/v1/shows/"+show+"/queue", "Bearer "+adminToken, `{"enabled":false}`)
	if st, _ := s.join(t, show, "a3"); st.Status != "closed" {
		t.Fatalf("join after switching off: %+v", st)
	}
}

// follow streams a fan's events with the r3labs client, as the load generator and any non-browser client do.
func follow(ctx context.Context, url string, handle func(*sse.Event) bool) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	c := sse.NewClient(url)
	c.ReconnectStrategy = backoff.WithContext(backoff.WithMaxTries(backoff.NewConstantBackOff(100*time.Millisecond), 3), ctx)
	var mu sync.Mutex
	stopped := false
	err := c.SubscribeRawWithContext(ctx, func(ev *sse.Event) {
		mu.Lock()
		defer mu.Unlock()
		if stopped || len(ev.Event) == 0 {
			return
		}
		if !handle(ev) {
			stopped = true
			stop()
		}
	})
	mu.Lock()
	defer mu.Unlock()
	if stopped {
		return nil
	}
	return err
}

// TestStreamEndToEnd follows a fan over SSE from joining to admission, then verifies the admission token the
// way a CDN worker would: an independent JOSE implementation, with nothing but the published JWKS.
func TestStreamEndToEnd(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{Tick: 50 * time.Millisecond}, nil)
	// The line stands still (one fan in 1,000 s) until the stream has told f7 its place, then moves at 4 a second:
	// started moving, a loaded machine could admit fans before the stream's first event.
	show := s.show(t, 0.001, 100)
	for i := range 8 {
		s.join(t, show, "f"+strconv.Itoa(i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var positions []int64
	var admitted state
	var moving sync.Once
	move := func() {
		req, _ := http.NewRequest("PUT", s.base+"/admin/v1/shows/"+show+"/queue", strings.NewReader(
			`{"enabled":true,"admitPerSecond":4,"maxActive":100,"tokenTtlSeconds":600}`))
		req.Header.Set("Authorization", "Bearer "+adminToken)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != 200 {
			t.Errorf("set the line moving: %v %v", res, err)
			return
		}
		res.Body.Close()
	}
	url := s.base + "/queue/" + show + "/events?access_token=" + s.user(t, "f7")
	err := follow(ctx, url, func(ev *sse.Event) bool {
		switch string(ev.Event) {
		case "position":
			var st state
			if err := json.Unmarshal(ev.Data, &st); err != nil {
				t.Errorf("position data %q: %v", ev.Data, err)
				return false
			}
			positions = append(positions, st.Position)
			moving.Do(move)
			return true
		case "admitted":
			_ = json.Unmarshal(ev.Data, &admitted)
			return false
		}
		return true
	})
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	if len(positions) < 2 || positions[0] != 8 {
		t.Fatalf("positions %v: want a start at 8", positions)
	}
	for i := 1; i < len(positions); i++ {
		if positions[i] > positions[i-1] || positions[i] < 1 {
			t.Fatalf("positions went backwards or below 1: %v", positions)
		}
	}
	if admitted.AdmissionToken == "" {
		t.Fatal("no admission token")
	}

	// The CDN's view: fetch the JWKS, verify with go-jose.
	res, b := s.do(t, "GET", "/.well-known/jwks.json", "", "")
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Cache-Control"), "public") {
		t.Fatalf("jwks: %d %q", res.StatusCode, res.Header.Get("Cache-Control"))
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil {
		t.Fatal(err)
	}
	tok, err := josejwt.ParseSigned(admitted.AdmissionToken, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		t.Fatal(err)
	}
	if len(tok.Headers) != 1 || tok.Headers[0].KeyID == "" {
		t.Fatalf("token header %+v: want a kid", tok.Headers)
	}
	keys := set.Key(tok.Headers[0].KeyID)
	if len(keys) != 1 {
		t.Fatalf("kid %s not in the JWKS", tok.Headers[0].KeyID)
	}
	var std josejwt.Claims
	var custom struct {
		Show string `json:"show"`
	}
	if err := tok.Claims(keys[0].Key, &std, &custom); err != nil {
		t.Fatalf("go-jose verification: %v", err)
	}
	if err := std.Validate(josejwt.Expected{Subject: "f7", AnyAudience: josejwt.Audience{token.Audience},
		Time: time.Now()}); err != nil {
		t.Fatalf("claims: %v", err)
	}
	if custom.Show != show || std.ID == "" || std.IssuedAt == nil {
		t.Fatalf("claims: %+v %+v", std, custom)
	}
	// A forged token (another key) fails the same check.
	other, _ := token.GenerateKey()
	forged, _, _ := token.NewIssuer(other).Issue("f7", show, "j", time.Now(), time.Minute)
	ftok, err := josejwt.ParseSigned(forged, []jose.SignatureAlgorithm{jose.EdDSA})
	if err == nil && len(set.Key(ftok.Headers[0].KeyID)) > 0 {
		t.Fatal("a stranger's kid is in the JWKS")
	}
	if err == nil && ftok.Claims(keys[0].Key, &std) == nil {
		t.Fatal("a forged token verified")
	}
}

// TestStreamReconnectKeepsPlace drops a stream and comes back: same place, and Last-Event-ID is honoured.
func TestStreamReconnectKeepsPlace(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{Tick: 50 * time.Millisecond}, nil)
	show := s.show(t, 0.001, 100) // effectively paused: positions stay put
	for i := range 5 {
		s.join(t, show, "k"+strconv.Itoa(i))
	}
	url := s.base + "/queue/" + show + "/events?access_token=" + s.user(t, "k3")
	first := func(lastID string) (*sse.Event, time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		var got *sse.Event
		c := sse.NewClient(url)
		if lastID != "" {
			c.LastEventID.Store([]byte(lastID))
		}
		c.ReconnectStrategy = backoff.WithContext(&backoff.StopBackOff{}, ctx)
		_ = c.SubscribeRawWithContext(ctx, func(ev *sse.Event) {
			if got == nil && string(ev.Event) == "position" {
				got = ev
				cancel()
			}
		})
		return got, time.Since(start)
	}
	ev, _ := first("")
	if ev == nil {
		t.Fatal("no position event")
	}
	var st state
	_ = json.Unmarshal(ev.Data, &st)
	if st.Position != 4 {
		t.Fatalf("position %d, want 4", st.Position)
	}
	// Reconnect with the last id: the same place; the unchanged state is not repeated at once, only at the
	// next 2 s refresh.
	ev2, took := first(string(ev.ID))
	if ev2 == nil {
		t.Fatal("no position after reconnecting")
	}
	var st2 state
	_ = json.Unmarshal(ev2.Data, &st2)
	if st2.Position != 4 || string(ev2.ID) != string(ev.ID) {
		t.Fatalf("after reconnect: %+v id %s, want position 4 id %s", st2, ev2.ID, ev.ID)
	}
	if took < time.Second {
		t.Fatalf("resumed stream repeated the last event at once (%v)", took)
	}
	if st, _ := s.join(t, show, "k3"); st.Position != 4 {
		t.Fatalf("join after reconnect: %+v", st)
	}
}

// TestStalledClientDoesNotDelayOthers opens a stream nobody reads, then checks another fan's stream still
// gets its updates in time.
func TestStalledClientDoesNotDelayOthers(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{Tick: 50 * time.Millisecond}, nil)
	show := s.show(t, 3, 100)
	for i := range 6 {
		s.join(t, show, "z"+strconv.Itoa(i))
	}
	// The stalled client: connects, never reads.
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /queue/%s/events?access_token=%s HTTP/1.1\r\nHost: x\r\n\r\n", show, s.user(t, "z5"))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var last time.Time
	var worst time.Duration
	admittedAt := time.Time{}
	err = follow(ctx, s.base+"/queue/"+show+"/events?access_token="+s.user(t, "z4"), func(ev *sse.Event) bool {
		now := time.Now()
		if !last.IsZero() && now.Sub(last) > worst {
			worst = now.Sub(last)
		}
		last = now
		if string(ev.Event) == "admitted" {
			admittedAt = now
			return false
		}
		return true
	})
	if err != nil || admittedAt.IsZero() {
		t.Fatalf("follow: %v, admitted %v", err, admittedAt)
	}
	if worst > 3*time.Second { // refreshes come every 1.5-2 s; a blocked fan-out would stall for good
		t.Fatalf("a gap of %v between events, want at most ~2 s", worst)
	}
}

func TestPageAndFairness(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{}, nil)
	show := s.show(t, 5, 100)
	res, b := s.do(t, "GET", "/queue/"+show, "", "")
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") ||
		!strings.HasPrefix(res.Header.Get("Cache-Control"), "public") || !strings.Contains(string(b), "/queue/assets/") {
		t.Fatalf("page: %d %v", res.StatusCode, res.Header)
	}
	if strings.Contains(string(b), "http://") || strings.Contains(string(b), "https://") {
		t.Fatal("the page references external assets")
	}
	res, b = s.do(t, "GET", "/queue/"+show+"/fairness", "", "")
	var f waitroom.Fairness
	if res.StatusCode != 200 || json.Unmarshal(b, &f) != nil || len(f.Commitment) != 64 || f.Recipe == "" {
		t.Fatalf("fairness: %d %s", res.StatusCode, b)
	}
}

// TestRedisDown: with the store unreachable the waiting room answers 503 store-unavailable problems with
// Retry-After, never a 500, on every route that needs it.
func TestRedisDown(t *testing.T) {
	t.Parallel()
	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer rdb.Close()
	k, _ := token.GenerateKey()
	svc := wrtest.Service(t, wrredis.New(rdb), rdb, token.NewIssuer(k), waitroom.Options{})
	h := wrhttp.New(wrhttp.Config{Service: svc, Users: token.NewUserVerifier(userSecret, nil, 0),
		Issuer: token.NewIssuer(k), AdminToken: adminToken})
	app := edgeApp()
	h.Mount(app)
	tok, _ := guestIssuer.Issue("u", time.Now(), time.Hour)
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/queue/s1/join", ""}, {"GET", "/queue/s1/status", ""}, {"GET", "/queue/s1/events", ""},
		{"GET", "/queue/s1/fairness", ""}, {"GET", "/admin/v1/shows/s1/queue", ""},
		{"PUT", "/admin/v1/shows/s1/queue", `{"enabled":true,"admitPerSecond":10,"maxActive":100,"tokenTtlSeconds":600}`},
	} {
		req, _ := http.NewRequest(r.method, "http://x"+r.path, strings.NewReader(r.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		if strings.HasPrefix(r.path, "/admin") {
			req.Header.Set("Authorization", "Bearer "+adminToken)
		}
		res, err := app.Test(req, 5000)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		var p problem.Problem
		if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" || json.Unmarshal(body, &p) != nil ||
			p.Type != problem.TypeBase+problem.StoreUnavailable {
			t.Errorf("%s %s: %d (Retry-After %q) %s, want 503 store-unavailable", r.method, r.path, res.StatusCode,
				res.Header.Get("Retry-After"), body)
		}
	}
}

// TestTurnHoldInAnswers: a waiting fan's join and status say how long the show holds a turn that comes while the
// fan is away, so the page can tell them what a locked phone costs.
func TestTurnHoldInAnswers(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{Tick: 50 * time.Millisecond}, nil)
	show := s.show(t, 0.001, 100)
	s.join(t, show, "ahead")
	tok := "Bearer " + s.user(t, "fan")
	for _, r := range []struct{ method, path string }{{"POST", "/join"}, {"GET", "/status"}} {
		res, b := s.do(t, r.method, "/queue/"+show+r.path, tok, "")
		var got struct {
			Status          string `json:"status"`
			TurnHoldSeconds int    `json:"turnHoldSeconds"`
		}
		if res.StatusCode != 200 || json.Unmarshal(b, &got) != nil || got.Status != "waiting" ||
			got.TurnHoldSeconds != 600 {
			t.Errorf("%s %s: %d %s, want waiting with turnHoldSeconds 600", r.method, r.path, res.StatusCode, b)
		}
	}
}
