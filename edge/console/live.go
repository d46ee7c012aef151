package console

import (
	"bufio"
	"encoding/json"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/shared/problem"
)

// live streams the figures to one console: event "figures" with a Snapshot, about once a second. One gatherer
// serves every open console (Figures), so a second console costs no extra reads.
func (con *Console) live(c *fiber.Ctx) error {
	if _, err := con.session(c, c.Cookies(Cookie)); err != nil {
		return err
	}
	ch, stop := con.figures.Subscribe()
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("X-Accel-Buffering", "no")
	done := con.stop
	first, ok := con.figures.Last()
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer stop()
		if _, err := w.WriteString("retry: 2000\n\n"); err != nil {
			return
		}
		if ok && !send(w, first) {
			return
		}
		beat := time.NewTicker(15 * time.Second)
		defer beat.Stop()
		for {
			select {
			case <-done:
				return
			case snap := <-ch:
				if !send(w, snap) {
					return
				}
			case <-beat.C:
				if _, err := w.WriteString(": hb\n\n"); err != nil || w.Flush() != nil {
					return
				}
			}
		}
	})
	return nil
}

// figuresNow answers the latest figures once, as JSON: a console whose stream cannot reach it (a network or proxy
// that refuses event streams or holds them back) polls this instead. It keeps the gatherer running as a metrics
// scrape does; the first call after nobody watched waits for a fresh round.
func (con *Console) figuresNow(c *fiber.Ctx) error {
	if _, err := con.session(c, c.Cookies(Cookie)); err != nil {
		return err
	}
	snap, ok := con.figures.Want()
	if !ok {
		ch, stop := con.figures.Subscribe()
		defer stop()
		wait := time.NewTimer(firstRoundWait)
		defer wait.Stop()
		select {
		case snap, ok = <-ch:
		case <-wait.C:
		case <-con.stop:
		case <-c.UserContext().Done():
		}
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	if !ok {
		return problem.New(http.StatusServiceUnavailable, problem.ServiceUnavailable,
			"The figures are being gathered; ask again in a moment.").WithRetryAfter(1)
	}
	return c.JSON(snap)
}

// firstRoundWait bounds figuresNow's wait for a first round: longer than a round's own 5 s bound, so that a round
// that fails (booking down) still comes back, with its error, before it.
const firstRoundWait = 6 * time.Second

func send(w *bufio.Writer, snap Snapshot) bool {
	b, err := json.Marshal(snap)
	if err != nil {
		return false
	}
	if _, err := w.WriteString("event: figures\ndata: "); err != nil {
		return false
	}
	if _, err := w.Write(b); err != nil {
		return false
	}
	if _, err := w.WriteString("\n\n"); err != nil {
		return false
	}
	return w.Flush() == nil
}
