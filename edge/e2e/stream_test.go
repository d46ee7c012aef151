package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Booking's seat stream through the edge: open at once, and a hold made through the edge arrives as an event.
func TestSeatStreamThroughTheEdge(t *testing.T) {
	t.Parallel()
	p := start(t, nil)
	_, tok := guest(t, p)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", p.edge+"/api/v1/shows/"+p.show+"/seats/stream", nil)
	req.Header.Set("Accept", "text/event-stream")
	begin := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		br := bufio.NewReader(resp.Body)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			lines <- l
		}
	}()
	// The stream's opening comes at once: a proxy holding the stream back would deliver nothing while it stays
	// open. The bound is for a loaded machine; what follows checks that an event comes through live.
	select {
	case <-lines:
		t.Logf("first bytes of the stream after %v", time.Since(begin))
	case <-time.After(5 * time.Second):
		t.Fatal("nothing on the stream: the edge holds it back")
	}

	hold := fmt.Sprintf(`{"showId":%q,"seatIds":["F7"]}`, p.show)
	if status, b := send(t, "POST", p.edge+"/api/v1/bookings/hold", hold,
		map[string]string{"Authorization": "Bearer " + tok}); status != 201 {
		t.Fatalf("hold: %d %s", status, b)
	}
	held := time.Now()
	timeout := time.After(3 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("stream ended")
			}
			if strings.HasPrefix(l, "data:") && strings.Contains(l, `"F7"`) {
				t.Logf("seat event %v after the hold answered", time.Since(held))
				return
			}
		case <-timeout:
			t.Fatal("no seat event for the hold")
		}
	}
}
