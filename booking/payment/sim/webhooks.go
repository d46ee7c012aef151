package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/flashseat/flashseat/booking/payment"
)

// webhooks delivers signed events to one URL, retrying failed deliveries with backoff.
type webhooks struct {
	url, secret string
	log         *slog.Logger
	stop        <-chan struct{}
	count       func(ok bool)
	client      *http.Client

	mu     sync.Mutex // orders wg.Add against wait's wg.Wait
	closed bool
	wg     sync.WaitGroup
}

func newWebhooks(url, secret string, log *slog.Logger, stop <-chan struct{}, count func(bool)) *webhooks {
	return &webhooks{url: url, secret: secret, log: log, stop: stop, count: count,
		client: &http.Client{Timeout: 5 * time.Second}}
}

// send queues an event built around obj. Each event is delivered by its own goroutine: order is not guaranteed,
// as it is not by Stripe, so receivers must not depend on it.
func (h *webhooks) send(typ string, obj payment.WireObject) {
	if h.url == "" {
		return
	}
	ev := map[string]any{"id": newID("evt"), "object": "event", "type": typ, "created": time.Now().Unix(),
		"livemode": false, "api_version": "2024-06-20", "data": map[string]any{"object": obj}}
	body, _ := json.Marshal(ev)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.deliver(typ, body)
	}()
}

func (h *webhooks) deliver(typ string, body []byte) {
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := h.post(body)
		if err == nil {
			h.count(true)
			return
		}
		if attempt == 5 {
			h.log.Warn("webhook delivery failed", "type", typ, "attempts", attempt, "err", err)
			h.count(false)
			return
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-h.stop:
			t.Stop()
			h.count(false)
			return
		}
		backoff *= 3
	}
}

func (h *webhooks) post(body []byte) error {
	req, err := http.NewRequest(http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "flashseat-paysim/1")
	if h.secret != "" {
		req.Header.Set(payment.SignatureHeader, payment.Sign(body, h.secret, time.Now()))
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("webhook answered %d", resp.StatusCode)
	}
	return nil
}

func (h *webhooks) wait() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.wg.Wait()
}
