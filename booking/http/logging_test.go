package http

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

func TestWithRequestIDs(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := WithRequestIDs(slog.New(slog.NewJSONHandler(&buf, nil))).With("service", "booking")
	if WithRequestIDs(log) != log {
		t.Fatal("wrapped twice")
	}
	log.InfoContext(context.WithValue(context.Background(), requestIDKey, "req123"), "hello")
	log.InfoContext(context.Background(), "no request")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"request_id":"req123"`) || strings.Contains(lines[1], "request_id") {
		t.Fatalf("log = %s", buf.String())
	}
}
