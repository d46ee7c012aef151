package driver

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestRedisLoggerCountsWhatItLeftOut: within the interval a kind is written once; the next line says how many
// were left out, and another kind is never held back by the first.
func TestRedisLoggerCountsWhatItLeftOut(t *testing.T) {
	var out strings.Builder
	now := time.Unix(0, 0)
	l := &redisLogger{log: slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}})), every: 10 * time.Second, now: func() time.Time { return now }, kinds: map[string]*redisLogKind{}}
	ctx := context.Background()
	dial := "redis: connection pool: failed to dial after %d attempts: %v"
	for range 4 {
		l.Printf(ctx, dial, 5, "refused")
		now = now.Add(time.Second)
	}
	l.Printf(ctx, "redis: cluster: %s", "no slots")
	now = now.Add(10 * time.Second)
	l.Printf(ctx, dial, 5, "refused")
	want := `level=WARN msg="redis client: connection pool: failed to dial after 5 attempts: refused"
level=WARN msg="redis client: cluster: no slots"
level=WARN msg="redis client: connection pool: failed to dial after 5 attempts: refused" suppressed=3
`
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
}
