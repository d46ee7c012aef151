package problem

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/gofiber/fiber/v2"
)

func TestMarshalFlattensExtensions(t *testing.T) {
	t.Parallel()
	p := New(409, SeatsUnavailable, "taken").With("unavailable", []string{"A1"}).With("status", 999)
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["type"] != TypeBase+SeatsUnavailable || m["title"] != "Conflict" || m["status"] != float64(409) || m["detail"] != "taken" {
		t.Fatalf("standard members: %s", b)
	}
	if got := fmt.Sprint(m["unavailable"]); got != "[A1]" {
		t.Fatalf("extension unavailable = %s", got)
	}
	var back Problem
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Status != 409 || back.Type != p.Type || back.Extensions["unavailable"] == nil {
		t.Fatalf("round trip: %+v", back)
	}
}

func TestFromFiber(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err      error
		status   int
		slug     string
		isFibers bool
	}{
		{fiber.ErrNotFound, 404, NotFound, true},
		{fiber.ErrMethodNotAllowed, 405, MethodNotAllowed, true},
		{fiber.ErrRequestEntityTooLarge, 413, PayloadTooLarge, true},
		{fiber.ErrRequestHeaderFieldsTooLarge, 431, HeadersTooLarge, true},
		{fiber.ErrBadRequest, 400, BadRequest, true},
		{fiber.ErrInternalServerError, 500, Internal, true},
		{errors.New("plain"), 0, "", false},
	}
	for _, tc := range tests {
		p, ok := FromFiber(tc.err)
		if ok != tc.isFibers {
			t.Fatalf("%v: ok = %v", tc.err, ok)
		}
		if ok && (p.Status != tc.status || p.Type != TypeBase+tc.slug) {
			t.Fatalf("%v: got %d %s, want %d %s", tc.err, p.Status, p.Type, tc.status, tc.slug)
		}
	}
}

func TestSend(t *testing.T) {
	t.Parallel()
	app := fiber.New()
	app.Get("/", func(c *fiber.Ctx) error { return Send(c, New(422, Validation, "bad seats")) })
	resp, err := app.Test(httptest.NewRequest("GET", "/", nil))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 422 || resp.Header.Get("Content-Type") != ContentType || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("got %d %v", resp.StatusCode, resp.Header)
	}
	var p Problem
	if err := json.Unmarshal(body, &p); err != nil || p.Detail != "bad seats" {
		t.Fatalf("body %s: %v", body, err)
	}
}

func TestSendStoreDown(t *testing.T) {
	t.Parallel()
	app := fiber.New()
	app.Get("/", func(c *fiber.Ctx) error { return Send(c, StoreDown("postgres is restarting", 0)) })
	resp, err := app.Test(httptest.NewRequest("GET", "/", nil))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("got %d Retry-After %q, want 503 and 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	var p Problem
	if err := json.Unmarshal(body, &p); err != nil || p.Type != TypeBase+StoreUnavailable || p.Extensions[RetryAfterKey] != 1.0 {
		t.Fatalf("body %s: %v", body, err)
	}
}
