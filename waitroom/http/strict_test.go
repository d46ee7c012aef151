package http_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/waitroom"
)

// TestOperatorWritesRefuseUnknownFields: a queue's settings, bypass codes and prefix blocks with a misspelt or
// unknown member, at the top or nested, are a 422 problem naming the member by its path, and change nothing
// (encoding/json alone would skip the member and answer 200).
func TestOperatorWritesRefuseUnknownFields(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{}, nil)
	show := s.show(t, 5, 100)
	admin := "Bearer " + adminToken
	settings := func() []byte {
		_, b := s.do(t, "GET", "/admin/v1/shows/"+show+"/queue", admin, "")
		return b
	}
	codes := func() []byte {
		_, b := s.do(t, "GET", "/admin/v1/shows/"+show+"/bypass-codes", admin, "")
		return b
	}
	was, wasCodes := settings(), codes()
	queue := "/admin/v1/shows/" + show + "/queue"
	for _, tc := range []struct {
		name, method, path, body, field string
	}{
		{"a setting", "PUT", queue, `{"admitPerSecnd":50}`, "admitPerSecnd"},
		{"beside a known one", "PUT", queue, `{"admitPerSecond":50,"maxActiv":3}`, "maxActiv"},
		{"bot protection", "PUT", queue, `{"maxActive":3,"botProtection":{"enabled":false,"baseDificulty":9}}`, "botProtection.baseDificulty"},
		{"page", "PUT", queue, `{"page":{"mesage":"hi"}}`, "page.mesage"},
		{"autotune", "PUT", queue, `{"autotune":{"enabled":true,"targetP99Ms":100}}`, "autotune.targetP99Ms"},
		{"bypass codes", "POST", "/admin/v1/shows/" + show + "/bypass-codes", `{"count":1,"expiresAt":"2030-01-01T00:00:00Z","usess":5}`, "usess"},
		{"prefix block", "POST", "/admin/v1/shows/" + show + "/blocked-prefixes", `{"prefix":"203.0.113.7","prefx":"x"}`, "prefx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, b := s.do(t, tc.method, tc.path, admin, tc.body)
			var p problem.Problem
			if res.StatusCode != 422 || res.Header.Get("Content-Type") != problem.ContentType || json.Unmarshal(b, &p) != nil {
				t.Fatalf("got %d %s %s, want a 422 problem", res.StatusCode, res.Header.Get("Content-Type"), b)
			}
			if !strings.Contains(p.Detail, tc.field) {
				t.Fatalf("detail %q does not name %s", p.Detail, tc.field)
			}
		})
	}
	if now := settings(); !bytes.Equal(now, was) {
		t.Errorf("settings changed:\n%s\nwas\n%s", now, was)
	}
	if now := codes(); !bytes.Equal(now, wasCodes) {
		t.Errorf("bypass codes changed:\n%s\nwas\n%s", now, wasCodes)
	}
}
