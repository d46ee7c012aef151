package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	"github.com/r3labs/sse/v2"
	"gopkg.in/cenkalti/backoff.v1"
)

// QueueEvent is one event of GET /queue/{showId}/events.
type QueueEvent struct {
	Kind           string    // position, admitted, sold_out, closed (or whatever else the server sends)
	ID             string    // the event's id, as Last-Event-ID would resend it
	Position       int       `json:"position"`
	EtaSeconds     float64   `json:"etaSeconds"`
	AdmissionToken string    `json:"admissionToken"`
	ExpiresAt      time.Time `json:"expiresAt"`
	// Receipt is a newer place receipt, of an event of Kind "receipt": not the server's event but the stream's
	// (re)connection answering with the fs_place_{show} cookie, as a browser's cookie jar would keep it. Follow
	// presents it on its next reconnects itself; the fan keeps it for a re-join.
	Receipt string `json:"-"`
}

// ErrStreamRefused is returned when the server answered the stream request with a 4xx: retrying cannot help.
var ErrStreamRefused = errors.New("client: event stream refused")

// Follow streams the fan's queue events to handle until handle returns false, ctx ends, or the server ends the
// stream for good. It authenticates with ?access_token=, as a browser's EventSource must. The r3labs client
// reconnects on a dropped connection, sending Last-Event-ID so the server can resume; its default policy retries
// for 15 minutes even after ctx ends, so the policy here is bound to ctx and to a few tries. receipt, when not
// empty, is the fan's place receipt, sent as X-Place-Receipt on every (re)connect as a browser sends its cookie:
// a waiting room that forgot the fan gives the place back.
func (c *Client) Follow(ctx context.Context, user, showID, receipt string, handle func(QueueEvent) bool) error {
	u := *c.base
	u.Path = c.base.Path + "/queue/" + url.PathEscape(showID) + "/events"
	u.RawQuery = url.Values{"access_token": {user}}.Encode()

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	s := sse.NewClient(u.String())
	s.Connection = c.stream
	if receipt != "" {
		s.Headers[HeaderPlaceReceipt] = receipt
	}
	s.ReconnectStrategy = backoff.WithContext(backoff.WithMaxTries(&reconnectBackOff{}, 8), ctx)
	var stopped bool
	cookie := "fs_place_" + showID
	s.ResponseValidator = func(_ *sse.Client, resp *http.Response) error {
		if resp.StatusCode == http.StatusOK {
			for _, k := range resp.Cookies() {
				if k.Name == cookie && k.Value != "" && k.Value != s.Headers[HeaderPlaceReceipt] {
					s.Headers[HeaderPlaceReceipt] = k.Value
					if !stopped && !handle(QueueEvent{Kind: "receipt", Receipt: k.Value}) {
						stopped = true
						stop()
					}
				}
			}
			return nil
		}
		resp.Body.Close()
		err := fmt.Errorf("%w: status %d", ErrStreamRefused, resp.StatusCode)
		if resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests {
			return backoff.Permanent(err)
		}
		return err
	}

	handler := func(msg *sse.Event) {
		// A heartbeat comment reaches here as an event carrying only the last id (r3labs fills it in): skip it.
		if stopped || (len(msg.Event) == 0 && len(msg.Data) == 0) {
			return
		}
		ev := QueueEvent{Kind: string(msg.Event), ID: string(msg.ID)}
		if len(msg.Data) > 0 && msg.Data[0] == '{' {
			_ = json.Unmarshal(msg.Data, &ev) // a malformed event is passed on with its kind only
		}
		if ev.Kind == "" {
			ev.Kind = "message"
		}
		if !handle(ev) {
			stopped = true
			stop()
		}
	}
	// The r3labs client treats a stream the server closed cleanly as finished, not as dropped; but the waiting
	// room only ends a stream after a verdict event, so a clean close without one (a replica shutting down, a proxy
	// timing out) is resumed here, with the same client and so the same Last-Event-ID.
	var err error
	for resumes := 0; resumes < 8; resumes++ {
		err = s.SubscribeRawWithContext(ctx, handler)
		if stopped || err != nil || ctx.Err() != nil {
			break
		}
	}
	if stopped {
		return nil
	}
	if err == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// reconnectBackOff waits 200 ms before a stream's first reconnect, doubling to at most 2 s, each wait jittered by
// ±50%. backoff.ExponentialBackOff does the same with a math/rand source of its own, 5 KB a stream: the stadium's
// ten thousand waiting fans per process kept 50 MB in them.
type reconnectBackOff struct{ next time.Duration }

func (b *reconnectBackOff) NextBackOff() time.Duration {
	if b.next == 0 {
		b.Reset()
	}
	d := b.next
	b.next = min(2*b.next, 2*time.Second)
	return d/2 + rand.N(d)
}

func (b *reconnectBackOff) Reset() { b.next = 200 * time.Millisecond }
