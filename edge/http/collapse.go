package http

import (
	"bytes"
	"sync"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// Identical seat-map reads in flight at once share one upstream fetch. In a flash crowd thousands of fans poll the
// same show's seat map, booking renders the same JSON for each, and the edge carries each over its own exchange.
//
// What is shared, and when:
//   - Only requests whose route says so (edge.Route.Shared: GET of the seat map's JSON), with no body, on the fast
//     path, after each has passed the rate limits and the gate on its own: sharing never lets a request skip a check.
//   - Only a 200 without Set-Cookie or Vary: an answer that is the same for every caller. Anything else (an error,
//     a refusal, an upstream failure) is the leader's alone, and each other request is then forwarded on its own.
//   - Never an answer fetched before a request arrived: a request that finds a fetch in flight waits for it to end
//     and joins the next one, which starts only then. So every answer is one booking produced after the request
//     reached the edge, as a direct request's would be: a seat held before the request began is in it (within
//     booking's own seat snapshot, which a direct read shares). Nothing is kept once a fetch's requests are
//     answered: this is not a cache.
//
// A request waits at most for the fetch in flight (bounded by UPSTREAM_TIMEOUT) and then its own.
type collapser struct {
	mu    sync.Mutex
	slots map[string]*slot // by request target; an entry lives only while a fetch for it is in flight
}

// slot is one request target's fetches: the one in flight, and the one that starts when it ends.
type slot struct {
	running, next *flight
}

// flight is one upstream fetch and the requests that wait for it.
type flight struct {
	done    chan struct{} // closed when answer is set
	answer  *sharedAnswer // nil: not to be shared, each waiting request is forwarded on its own
	waiters int           // requests that joined while it was next; none join once it runs
}

// sharedAnswer is an upstream answer every sharing request is given as it is. It is not changed once published.
type sharedAnswer struct {
	status int
	header [][2][]byte
	body   []byte
}

// shareable returns resp's status and headers for sharing, or nil when the answer is not the same for everyone.
func shareable(resp *fasthttp.Response) *sharedAnswer {
	if resp.StatusCode() != fiber.StatusOK || len(resp.Header.Peek(fiber.HeaderVary)) > 0 ||
		len(resp.Header.Peek(fiber.HeaderSetCookie)) > 0 {
		return nil
	}
	a := &sharedAnswer{status: resp.StatusCode()}
	incoming(resp, func(k, v []byte) { a.header = append(a.header, [2][]byte{bytes.Clone(k), bytes.Clone(v)}) })
	return a
}

// write gives the request the shared answer. The body is not copied: fasthttp only reads it.
func (a *sharedAnswer) write(c *fiber.Ctx) {
	rh := &c.Response().Header
	for _, kv := range a.header {
		rh.AddBytesKV(kv[0], kv[1])
	}
	c.Status(a.status)
	c.Response().SetBodyRaw(a.body)
}

// sharedKey returns the key under which the request may share its fetch: its target as sent, for a GET without a
// body of a route whose answer is the same for everyone.
func sharedKey(c *fiber.Ctx) (string, bool) {
	fr := c.Request()
	if !fr.Header.IsGet() || len(fr.Body()) > 0 || !routeOf(c).Shared {
		return "", false
	}
	return string(fr.Header.RequestURI()), true
}

// handleShared forwards a request that may share its fetch with identical ones in flight (key: its target).
func (p *Proxy) handleShared(c *fiber.Ctx, key string) error {
	co := &p.collapse
	co.mu.Lock()
	s := co.slots[key]
	if s == nil {
		s = &slot{}
		co.slots[key] = s
	}
	switch {
	case s.running == nil: // nothing in flight: fetch now, for this request alone
		f := &flight{done: make(chan struct{})}
		s.running = f
		co.mu.Unlock()
		return p.lead(c, key, s, f, false)
	case s.next != nil: // the next fetch is already waiting to start: join it
		f := s.next
		f.waiters++
		co.mu.Unlock()
		<-f.done
		if f.answer == nil {
			return p.handleFast(c)
		}
		f.answer.write(c)
		return nil
	default: // a fetch began before this request arrived: start the next one when it ends
		f := &flight{done: make(chan struct{})}
		s.next = f
		prev := s.running
		co.mu.Unlock()
		<-prev.done
		co.mu.Lock()
		s.running, s.next = f, nil
		share := f.waiters > 0
		co.mu.Unlock()
		return p.lead(c, key, s, f, share)
	}
}

// lead fetches for flight f of slot s and publishes the answer to the requests waiting for it, if any (share).
// Whatever happens to the fetch, even a panic, the waiting requests are let go and the slot is handed on.
func (p *Proxy) lead(c *fiber.Ctx, key string, s *slot, f *flight, share bool) (err error) {
	var answer *sharedAnswer
	defer func() {
		co := &p.collapse
		co.mu.Lock()
		f.answer = answer
		if s.next == nil { // else the next fetch's leader, waiting for f.done, takes the slot over
			s.running = nil
			delete(co.slots, key)
		}
		co.mu.Unlock()
		close(f.done)
	}()
	answer, err = p.forwardFast(c, share)
	return err
}
