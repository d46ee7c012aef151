package http

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"syscall"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	edgehttp "github.com/flashseat/flashseat/edge/http"
	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/shared/session"
	"github.com/flashseat/flashseat/shared/token"
	"github.com/flashseat/flashseat/waitroom"
)

// Every error a waiting-room handler returns reaches the client as the edge's error handler renders it: the
// waiting room's own through codes, the rest (the CSRF rule, user tokens, the unexpected) through the edge's
// table and its one fallback.
func TestErrorTable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		err    error
		status int
		slug   string
		detail string // "": not checked
	}{
		{"no user token", errUnauthenticated, 401, problem.Unauthorized, "A valid user token is required."},
		{"no admin token", errAdminMissing, 401, problem.Unauthorized, "An admin token is required."},
		{"wrong admin token", errAdminWrong, 403, problem.Forbidden, "This token may not change queues."},
		{"malformed JSON", fmt.Errorf("%w: the body must be a JSON object", errBadJSON), 400, problem.BadRequest,
			"the body must be a JSON object"},
		{"bad settings", fmt.Errorf("%w: maxActive too large", errValidation), 422, problem.Validation, "maxActive too large"},
		{"unknown admission", admission.ErrUnknownAdmission, 404, problem.NotFound, "No such admission."},
		{"bad id", fmt.Errorf("%w: show id", waitroom.ErrInvalid), 400, problem.BadRequest, "show id"},
		{"unknown show", waitroom.ErrUnknownShow, 404, problem.NotFound, "No such show."},
		{"not in queue", waitroom.ErrNotInQueue, 404, problem.NotFound, "You are not in this queue; join it first."},
		{"redis down", fmt.Errorf("%w: dial", waitroom.ErrUnavailable), 503, problem.StoreUnavailable,
			"The waiting room is briefly unavailable; your place is kept. Retry in a second."},
		{"a store error unclassified", fmt.Errorf("touch: %w", syscall.ECONNREFUSED), 503, problem.StoreUnavailable, ""},
		{"draw pending", waitroom.ErrDrawPending, 503, problem.ServiceUnavailable, "The queue is opening; retry in a second."},
		{"too many streams", waitroom.ErrTooManyStreams, 429, problem.RateLimited, ""},
		{"unknown bypass code", waitroom.ErrBypassUnknown, 422, problem.BypassCodeInvalid, ""},
		{"expired bypass code", waitroom.ErrBypassExpired, 422, problem.BypassCodeExpired, ""},
		{"used-up bypass code", waitroom.ErrBypassUsedUp, 409, problem.BypassCodeUsedUp, ""},
		{"revoked bypass code", waitroom.ErrBypassRevoked, 409, problem.BypassCodeRevoked, ""},
		{"bypass while paused", waitroom.ErrBypassNotNow, 409, problem.BypassNotNow, ""},
		// The edge's rows, which the waiting room's table does not copy.
		{"CSRF", session.ErrCSRF, 403, problem.CSRF, session.CSRFDetail},
		{"forged user token", fmt.Errorf("%w: signature", token.ErrInvalid), 401, problem.Unauthorized, "The user token is not valid."},
		{"expired user token", token.ErrExpired, 401, problem.Unauthorized, "The user token has expired."},
		{"fiber's own", fiber.ErrRequestEntityTooLarge, 413, problem.PayloadTooLarge, ""},
		{"a problem passes through", problem.New(409, problem.Conflict, "x"), 409, problem.Conflict, "x"},
		{"anything else", errors.New("boom"), 500, problem.Internal, "Something went wrong."},
	}
	h := New(Config{Log: slog.New(slog.DiscardHandler)})
	app := edgehttp.New(edgehttp.Config{
		Proxy:    edgehttp.ProxyConfig{Target: &url.URL{Scheme: "http", Host: "127.0.0.1:1"}},
		Registry: prometheus.NewRegistry(),
		Log:      slog.New(slog.DiscardHandler),
	}).App
	for i, tc := range tests {
		app.Get(fmt.Sprintf("/case/%d", i), h.wrap(func(*fiber.Ctx) error { return tc.err }))
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := app.Test(httptest.NewRequest("GET", fmt.Sprintf("/case/%d", i), nil), -1)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			var p problem.Problem
			if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != problem.ContentType ||
				json.Unmarshal(body, &p) != nil || p.Type != problem.TypeBase+tc.slug {
				t.Fatalf("got %d %s %s, want %d problem %s", resp.StatusCode, resp.Header.Get("Content-Type"), body,
					tc.status, tc.slug)
			}
			if tc.detail != "" && p.Detail != tc.detail {
				t.Fatalf("detail %q, want %q", p.Detail, tc.detail)
			}
			if (tc.status == 503 || tc.status == 429) && resp.Header.Get("Retry-After") == "" {
				t.Fatalf("a %d without Retry-After", tc.status)
			}
		})
	}
}
