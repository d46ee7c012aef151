package driver

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// redisLogEvery is how often one kind of go-redis message is written. While Redis is down, go-redis logs every
// failed dial of every pooled connection: hundreds of lines a second under load, which bury everything else the
// service logs (and, in a test run, the failing test's own output).
const redisLogEvery = 10 * time.Second

// LogRedis sends go-redis's own messages (a pool that cannot dial, a cluster that cannot load its slots) to log at
// warning level, each kind at most once every ten seconds with the count of those left out since. go-redis keeps
// one logger for the whole process, so a service's main calls this once; until then go-redis writes plain lines
// to standard error.
func LogRedis(log *slog.Logger) {
	goredis.SetLogger(&redisLogger{log: log, every: redisLogEvery, now: time.Now, kinds: map[string]*redisLogKind{}})
}

// redisLogger is go-redis's Logging on slog. A kind is a message's format, which go-redis fixes per call site.
type redisLogger struct {
	log   *slog.Logger
	every time.Duration
	now   func() time.Time

	mu    sync.Mutex
	kinds map[string]*redisLogKind
}

type redisLogKind struct {
	last       time.Time
	suppressed int
}

func (l *redisLogger) Printf(ctx context.Context, format string, v ...any) {
	now := l.now()
	l.mu.Lock()
	k := l.kinds[format]
	if k == nil {
		k = &redisLogKind{}
		l.kinds[format] = k
	}
	if !k.last.IsZero() && now.Sub(k.last) < l.every {
		k.suppressed++
		l.mu.Unlock()
		return
	}
	suppressed := k.suppressed
	k.last, k.suppressed = now, 0
	l.mu.Unlock()
	msg := strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: ")
	if suppressed > 0 {
		l.log.WarnContext(ctx, "redis client: "+msg, "suppressed", suppressed)
		return
	}
	l.log.WarnContext(ctx, "redis client: "+msg)
}
