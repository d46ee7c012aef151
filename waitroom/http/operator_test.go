package http_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/r3labs/sse/v2"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/audit"
	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/shared/token"
	"github.com/flashseat/flashseat/waitroom"
	"github.com/flashseat/flashseat/waitroom/internal/wrtest"
)

// admitted polls a fan's status until admitted and returns the admission token.
func (s *server) admitted(t *testing.T, show, user string) string {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(30 * time.Millisecond) {
		res, b := s.do(t, "GET", "/queue/"+show+"/status", "Bearer "+s.user(t, user), "")
		var st state
		if res.StatusCode == 200 && json.Unmarshal(b, &st) == nil && st.Status == "admitted" {
			return st.AdmissionToken
		}
	}
	t.Fatalf("%s not admitted within 5 s", user)
	return ""
}

// gate is what edge and booking run, on the same records as the server.
func (s *server) gate(t *testing.T) *admission.Gate {
	t.Helper()
	return admission.NewGate(wrtest.Keeper(t, s.rdb), token.NewStaticKeys(s.issuer.Keys()...), 0)
}

// jti reads an admission token's id (the operator sees it in the console's fan lookup).
func jti(t *testing.T, raw string) string {
	t.Helper()
	var c token.Admission
	if _, _, err := jwt.NewParser().ParseUnverified(raw, &c); err != nil || c.ID == "" {
		t.Fatalf("token claims: %v", err)
	}
	return c.ID
}

// TestKick: an operator revokes one admission by id and another fan by user id; both tokens are refused from
// then on by the gate edge and booking run, the changes are audited with the operator's name, and bad input
// gets a 4xx problem.
func TestKick(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newServer(t, waitroom.Options{Tick: 30 * time.Millisecond}, nil)
	show := s.show(t, 100, 100)
	s.join(t, show, "k1")
	s.join(t, show, "k2")
	s.join(t, show, "k3")
	t1, t2, t3 := s.admitted(t, show, "k1"), s.admitted(t, show, "k2"), s.admitted(t, show, "k3")
	gate := s.gate(t)
	for user, raw := range map[string]string{"k1": t1, "k2": t2, "k3": t3} {
		if _, err := gate.Check(ctx, show, user, raw); err != nil {
			t.Fatalf("%s before the kick: %v", user, err)
		}
	}

	admin := "Bearer " + adminToken
	req := func(path, operator string) (*http.Response, []byte) {
		t.Helper()
		r, _ := http.NewRequest("POST", s.base+path, nil)
		r.Header.Set("Authorization", admin)
		if operator != "" {
			r.Header.Set(audit.OperatorHeader, operator)
		}
		res, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var b []byte
		b, _ = io.ReadAll(res.Body)
		return res, b
	}
	res, b := req("/admin/v1/shows/"+show+"/admissions/"+jti(t, t1)+"/revoke", "ops@example.com")
	if res.StatusCode != 200 || !strings.Contains(string(b), `"userId":"k1"`) {
		t.Fatalf("kick by jti: %d %s", res.StatusCode, b)
	}
	res, b = req("/admin/v1/shows/"+show+"/fans/k2/revoke", "")
	if res.StatusCode != 200 || !strings.Contains(string(b), jti(t, t2)) {
		t.Fatalf("kick by user: %d %s", res.StatusCode, b)
	}
	gate.Forget(show)
	for user, raw := range map[string]string{"k1": t1, "k2": t2} {
		if _, err := gate.Check(ctx, show, user, raw); !errors.Is(err, token.ErrRevoked) {
			t.Fatalf("%s after the kick: got %v, want ErrRevoked", user, err)
		}
	}
	if _, err := gate.Check(ctx, show, "k3", t3); err != nil {
		t.Fatalf("k3 was not kicked: %v", err)
	}
	// Kicking again is harmless for an id; a fan with no live admission left is a 404.
	if res, b := req("/admin/v1/shows/"+show+"/admissions/"+jti(t, t1)+"/revoke", ""); res.StatusCode != 200 {
		t.Fatalf("kick the same admission again: %d %s", res.StatusCode, b)
	}

	for _, tc := range []struct {
		name, auth, path string
		want             int
	}{
		{"no admin token", "", "/admin/v1/shows/" + show + "/fans/k3/revoke", 401},
		{"a user token", "Bearer " + s.user(t, "k3"), "/admin/v1/shows/" + show + "/fans/k3/revoke", 403},
		{"unknown admission", admin, "/admin/v1/shows/" + show + "/admissions/no-such-jti/revoke", 404},
		{"fan never admitted", admin, "/admin/v1/shows/" + show + "/fans/nobody/revoke", 404},
		{"fan already kicked", admin, "/admin/v1/shows/" + show + "/fans/k2/revoke", 404},
		{"bad show id", admin, "/admin/v1/shows/" + strings.Repeat("x", 200) + "/fans/k3/revoke", 400},
		{"show id with a brace", admin, "/admin/v1/shows/a%7Bb/admissions/j/revoke", 400},
		{"user id with a control character", admin, "/admin/v1/shows/" + show + "/fans/a%0Ab/revoke", 400},
		{"jti too long", admin, "/admin/v1/shows/" + show + "/admissions/" + strings.Repeat("j", 200) + "/revoke", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := http.NewRequest("POST", s.base+tc.path, nil)
			if tc.auth != "" {
				r.Header.Set("Authorization", tc.auth)
			}
			res, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tc.want || res.Header.Get("Content-Type") != problem.ContentType {
				t.Fatalf("got %d %q %s, want %d problem+json", res.StatusCode, res.Header.Get("Content-Type"), b, tc.want)
			}
		})
	}

	entries, err := audit.New(wrtest.Database(t)).List(ctx, audit.Filter{ShowID: show})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Actor+" "+e.Action)
	}
	want := "api admission.revoke|api fan.revoke|ops@example.com admission.revoke|api queue.settings"
	if strings.Join(got, "|") != want {
		t.Fatalf("audit: got %v, want %s", got, want)
	}
}

// TestPause: pausing keeps the queue on and everyone's place, admits nobody, and says so in join, status and the
// stream; resuming admits again.
func TestPause(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newServer(t, waitroom.Options{Tick: 30 * time.Millisecond}, nil)
	show := s.show(t, 100, 100)
	admin := "Bearer " + adminToken
	res, b := s.do(t, "PUT", "/admin/v1/shows/"+show+"/queue", admin, `{"paused":true}`)
	if res.StatusCode != 200 || !strings.Contains(string(b), `"paused":true`) || !strings.Contains(string(b), `"enabled":true`) {
		t.Fatalf("pause: %d %s", res.StatusCode, b)
	}
	res, b = s.do(t, "POST", "/queue/"+show+"/join", "Bearer "+s.user(t, "p1"), "")
	if res.StatusCode != 200 || !strings.Contains(string(b), `"paused":true`) || !strings.Contains(string(b), `"status":"waiting"`) {
		t.Fatalf("join while paused: %d %s", res.StatusCode, b)
	}
	s.join(t, show, "p2")

	// The stream says paused too.
	events := make(chan *sse.Event, 16)
	go func() {
		_ = follow(ctx, s.base+"/queue/"+show+"/events?access_token="+url.QueryEscape(s.user(t, "p2")),
			func(e *sse.Event) bool { events <- e; return true })
	}()
	deadline := time.After(5 * time.Second)
	for seen := false; !seen; {
		select {
		case e := <-events:
			if string(e.Event) == "admitted" {
				t.Fatal("admitted while paused")
			}
			seen = string(e.Event) == "position" && strings.Contains(string(e.Data), `"paused":true`)
		case <-deadline:
			t.Fatal("no paused position event")
		}
	}
	time.Sleep(300 * time.Millisecond) // ten ticks at 100/s would admit everyone
	res, b = s.do(t, "GET", "/queue/"+show+"/status", "Bearer "+s.user(t, "p1"), "")
	if res.StatusCode != 200 || !strings.Contains(string(b), `"status":"waiting"`) || !strings.Contains(string(b), `"paused":true`) {
		t.Fatalf("status while paused: %d %s", res.StatusCode, b)
	}
	res, b = s.do(t, "GET", "/admin/v1/shows/"+show+"/queue", admin, "")
	if !strings.Contains(string(b), `"paused":true`) || !strings.Contains(string(b), `"admittedTotal":0`) {
		t.Fatalf("settings while paused: %d %s", res.StatusCode, b)
	}

	if res, b := s.do(t, "PUT", "/admin/v1/shows/"+show+"/queue", admin, `{"paused":false}`); res.StatusCode != 200 {
		t.Fatalf("resume: %d %s", res.StatusCode, b)
	}
	s.admitted(t, show, "p1")
	for {
		select {
		case e := <-events:
			if string(e.Event) == "admitted" {
				return
			}
		case <-time.After(5 * time.Second):
			t.Fatal("p2's stream not admitted after the resume")
		}
	}
}
