package console

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/shared/infra/storetest"
	"github.com/flashseat/flashseat/shared/problem"
)

// TestFiguresOnce: GET /admin/figures waits for a first round when nobody has watched, and answers it even when
// the round could not read booking (the error said in words); with the console shutting down and no round yet,
// it answers 503 with Retry-After. Without a session, 401.
func TestFiguresOnce(t *testing.T) {
	rdb := testRedis(t)
	booking, _ := url.Parse("http://" + storetest.DeadAddr(t))
	serve := func(t *testing.T, run bool) (*Console, func(cookie string) (*http.Response, []byte)) {
		f := NewFigures(booking, "token", nil, time.Second, nil)
		if run {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			go f.Run(ctx)
		}
		con := New(Config{AdminToken: "operator-token", Redis: rdb, Figures: f})
		app := fiber.New(fiber.Config{ErrorHandler: func(c *fiber.Ctx, err error) error {
			var p *problem.Problem
			if errors.As(err, &p) {
				return problem.Send(c, p)
			}
			return err
		}})
		con.Mount(app)
		return con, func(cookie string) (*http.Response, []byte) {
			req := httptest.NewRequest("GET", "/admin/figures", nil)
			if cookie != "" {
				req.AddCookie(&http.Cookie{Name: Cookie, Value: cookie})
			}
			res, err := app.Test(req, 10_000)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			return res, body
		}
	}

	t.Run("a first round, failed", func(t *testing.T) {
		con, get := serve(t, true)
		ss, raw := con.sessions.issue("Asha")
		t.Cleanup(func() { rdb.Del(context.Background(), revokedKey(ss.ID)) })
		if res, _ := get(""); res.StatusCode != 401 {
			t.Fatalf("without a session: %d", res.StatusCode)
		}
		res, body := get(raw)
		var snap Snapshot
		if res.StatusCode != 200 || json.Unmarshal(body, &snap) != nil || !strings.Contains(snap.Error, "could not be read") {
			t.Fatalf("figures: %d %s", res.StatusCode, body)
		}
	})
	t.Run("shutting down, no round", func(t *testing.T) {
		con, get := serve(t, false)
		ss, raw := con.sessions.issue("Asha")
		t.Cleanup(func() { rdb.Del(context.Background(), revokedKey(ss.ID)) })
		con.Close()
		res, body := get(raw)
		if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" ||
			!strings.HasPrefix(res.Header.Get("Content-Type"), "application/problem+json") {
			t.Fatalf("figures while shutting down: %d %s %s", res.StatusCode, res.Header, body)
		}
	})
}
