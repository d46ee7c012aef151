package http_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
)

// TestFanLookup: an operator reads a fan's standing (admitted with the admission's id, never its token; waiting
// with a position), and bad look-ups are 4xx problems.
func TestFanLookup(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{Tick: 20 * time.Millisecond}, nil)
	show := s.show(t, 50, 1) // one active slot: the first fan is admitted, the second waits
	s.join(t, show, "first")
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, b := s.do(t, "GET", "/queue/"+show+"/status", "Bearer "+s.user(t, "first"), "")
		if res.StatusCode == 200 && strings.Contains(string(b), `"admitted"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("first fan never admitted: %s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.join(t, show, "second")

	var fan struct {
		Status   string
		Position int64
		JTI      string
		IssuedAt time.Time
	}
	res, b := s.do(t, "GET", "/admin/v1/shows/"+show+"/fans/first", "Bearer "+adminToken, "")
	if res.StatusCode != 200 || json.Unmarshal(b, &fan) != nil || fan.Status != "admitted" || fan.JTI == "" ||
		time.Since(fan.IssuedAt) > time.Minute || strings.Contains(string(b), "eyJ") {
		t.Fatalf("admitted fan: %d %s", res.StatusCode, b)
	}
	res, b = s.do(t, "GET", "/admin/v1/shows/"+show+"/fans/second", "Bearer "+adminToken, "")
	if res.StatusCode != 200 || json.Unmarshal(b, &fan) != nil || fan.Status != "waiting" || fan.Position != 1 {
		t.Fatalf("waiting fan: %d %s", res.StatusCode, b)
	}
	for _, tc := range []struct {
		name, path, auth string
		want             int
	}{
		{"not in the queue", "/admin/v1/shows/" + show + "/fans/nobody", "Bearer " + adminToken, 404},
		{"without token", "/admin/v1/shows/" + show + "/fans/first", "", 401},
		{"with a user token", "/admin/v1/shows/" + show + "/fans/first", "Bearer " + s.user(t, "first"), 403},
		{"bad show id", "/admin/v1/shows/" + strings.Repeat("x", 200) + "/fans/first", "Bearer " + adminToken, 400},
		{"user id too long", "/admin/v1/shows/" + show + "/fans/" + strings.Repeat("u", 300), "Bearer " + adminToken, 400},
	} {
		res, b := s.do(t, "GET", tc.path, tc.auth, "")
		if res.StatusCode != tc.want || res.Header.Get("Content-Type") != problem.ContentType {
			t.Errorf("%s: %d %s %s, want %d problem", tc.name, res.StatusCode, res.Header.Get("Content-Type"), b, tc.want)
		}
	}
}

// TestClosedSaleClosesTheQueue: once booking marks a show's sale closed in ShowInfo, joins answer closed.
func TestClosedSaleClosesTheQueue(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{}, nil)
	show := s.show(t, 5, 100)
	if st, _ := s.join(t, show, "before"); st.Status == "closed" {
		t.Fatalf("open queue answers %+v", st)
	}
	if err := s.rdb.HSet(context.Background(), rediskey.ShowInfo(show), rediskey.InfoClosed, "1").Err(); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.join(t, show, "after"); st.Status != "closed" {
		t.Fatalf("join after the sale closed: %+v", st)
	}
}
