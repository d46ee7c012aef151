package app

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Many clients at once, ordinary requests and event streams mixed: every answer is the one for its own request.
// fiber recycles its request contexts and buffers between requests, so anything the proxy kept from one (a body,
// a header, a path) would show up in another's answer here; -race catches the rest.
func TestConcurrentForwarding(t *testing.T) {
	t.Parallel()
	up := echoUpstream(t)
	gone := make(chan struct{}, 64)
	sse := sseUpstream(t, 10*time.Millisecond, gone)
	edge := startEdge(t, map[string]string{"BOOKING_URL": up.URL})
	streams := startEdge(t, map[string]string{"BOOKING_URL": sse.URL})

	const clients, each = 24, 25
	var wg sync.WaitGroup
	errs := make(chan error, clients*each+8)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				id := fmt.Sprintf("c%d-r%d", c, i)
				body := strings.Repeat(id, 1+i%7)
				req, _ := http.NewRequest("POST", edge+"/api/v1/echo/"+id+"?q="+id, strings.NewReader(body))
				req.Header.Set("X-Mine", id)
				resp, err := client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				var got echoed
				err = json.NewDecoder(resp.Body).Decode(&got)
				resp.Body.Close()
				if err != nil || got.URI != "/api/v1/echo/"+id+"?q="+id || got.Body != body || got.Header.Get("X-Mine") != id {
					errs <- fmt.Errorf("%s: got uri %q body %.40q header %q (%v)", id, got.URI, got.Body, got.Header.Get("X-Mine"), err)
					return
				}
			}
		}(c)
	}
	for s := 0; s < 8; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Get(streams + "/api/v1/shows/s1/seats/stream")
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			for n := 0; n < 10; {
				line, err := br.ReadString('\n')
				if err != nil {
					errs <- fmt.Errorf("stream: %v", err)
					return
				}
				if strings.HasPrefix(line, "data:") {
					if want := fmt.Sprintf(`"A%d"`, n); !strings.Contains(line, want) {
						errs <- fmt.Errorf("stream event %d = %q", n, line)
						return
					}
					n++
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
