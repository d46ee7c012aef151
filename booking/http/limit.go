package http

import (
	"runtime"
	"time"

	"github.com/gofiber/fiber/v2"
)

// limiter bounds how many requests of the hot routes (hold, seat map) run at once. In a flash crowd thousands of
// connections deliver requests together; running all of them at once only makes the scheduler thrash and
// stretches every request's latency, the slow ones (those that wait on Redis or Postgres) most. Excess requests
// wait in line, parked, first come first served (a channel's waiters are woken in order), and the line moves at
// the rate the process can actually serve.
type limiter struct {
	slots chan struct{}
	wait  time.Duration
}

func newLimiter(n int, wait time.Duration) *limiter {
	if n <= 0 {
		n = 32 * runtime.GOMAXPROCS(0)
	}
	return &limiter{slots: make(chan struct{}, n), wait: wait}
}

// handler admits a request when a slot is free; one that waited longer than the limit gets 503 with Retry-After
// rather than a response too late to matter.
func (l *limiter) handler(c *fiber.Ctx) error {
	select {
	case l.slots <- struct{}{}:
	default:
		t := time.NewTimer(l.wait)
		select {
		case l.slots <- struct{}{}:
			t.Stop()
		case <-t.C:
			c.Set(fiber.HeaderRetryAfter, "1")
			return errBusy
		}
	}
	defer func() { <-l.slots }()
	return c.Next()
}
