package console

import (
	"bufio"
	"encoding/json"
	"time"

	"github.com/gofiber/fiber/v2"
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
