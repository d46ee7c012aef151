package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/showstats"
	"github.com/flashseat/flashseat/waitroom"
)

// QueueFigures are one show's waiting-room figures as this edge reads them from Redis.
type QueueFigures struct {
	Enabled         bool    `json:"enabled"`
	Paused          bool    `json:"paused"`
	AdmitPerSecond  float64 `json:"admitPerSecond"`
	MaxActive       int     `json:"maxActive"`
	TokenTTLSeconds int     `json:"tokenTtlSeconds"`
	Waiting         int64   `json:"waiting"`
	Active          int64   `json:"active"`
	AdmittedTotal   int64   `json:"admittedTotal"`
	// ActualRate is the measured speed of the queue (fans taken off it per second); zero until measured.
	ActualRate float64 `json:"actualRate"`
	// LastETASeconds is the expected wait of the last fan in line.
	LastETASeconds int64 `json:"lastEtaSeconds"`
	// TurnHoldSeconds and Bot are the rest of the show's settings, which the console's settings form edits.
	TurnHoldSeconds int                     `json:"turnHoldSeconds"`
	Bot             admission.BotProtection `json:"botProtection"`
	// Bots are the guard's figures across replicas: challenges, refusals by reason, places per prefix (the top
	// ten), for the console's Bots panel.
	Bots waitroom.BotFigures `json:"bots"`
	// Mode, Engaged, ActiveUsers and ArrivalsPerMinute against Tuning's thresholds, and the rate autotune set
	// with its reason (Tuning.AutotuneReason): the queue running itself.
	Mode              string `json:"mode"`
	Engaged           bool   `json:"engaged"`
	ActiveUsers       int64  `json:"activeUsers"`
	ArrivalsPerMinute int64  `json:"arrivalsPerMinute"`
	// Lanes is each lane's figures with its share (waitroom.Counts.Lanes), in the place of Tuning's lanes.
	Lanes []waitroom.LaneCounts `json:"lanes"`
	admission.Tuning
}

// QueueSource reads a show's queue figures (edge/app adapts the waiting room).
type QueueSource func(ctx context.Context, showID string) (QueueFigures, error)

// ShowFigures is one show on the console: booking's figures (seats, sales) with the queue's.
type ShowFigures struct {
	showstats.Show
	Queue QueueFigures `json:"queue"`
	// Conversion is confirmed bookings per admitted fan (0 before anyone was admitted).
	Conversion float64 `json:"conversion"`
}

// Snapshot is one round of figures: every upcoming show, and the payment breaker as booking reported it.
type Snapshot struct {
	At      time.Time     `json:"at"`
	Breaker string        `json:"breaker"`
	Shows   []ShowFigures `json:"shows"`
	// Error says, in words for the operator, what could not be read this round (the figures are then the last
	// ones read).
	Error string `json:"error,omitempty"`
}

// Figures gathers every upcoming show's figures about once a second, from booking's GET /admin/v1/stats (all
// shows in one call) and the waiting room's Redis state, and hands each round to every open console stream and
// to the per-show gauges. One gatherer per edge replica, however many consoles are open.
type Figures struct {
	bookingURL *url.URL
	adminToken string
	queues     QueueSource
	client     *http.Client
	every      time.Duration
	log        *slog.Logger

	mu       sync.Mutex
	last     Snapshot
	ready    bool
	failing  bool      // the last round failed (logged once per run of failures)
	wantedAt time.Time // the gauges were last scraped (Want)
	subs     map[chan Snapshot]struct{}
	notify   chan struct{} // a first subscriber arrived: gather now
}

// NewFigures returns a gatherer; Run starts it.
func NewFigures(bookingURL *url.URL, adminToken string, queues QueueSource, every time.Duration, log *slog.Logger) *Figures {
	if every <= 0 {
		every = time.Second
	}
	return &Figures{bookingURL: bookingURL, adminToken: adminToken, queues: queues,
		client: &http.Client{Timeout: 5 * time.Second}, every: every, log: log,
		subs: map[chan Snapshot]struct{}{}, notify: make(chan struct{}, 1)}
}

// Run gathers until ctx ends, while someone looks: a console is open, or the gauges were scraped in the last
// minute. An edge nobody watches costs booking nothing.
func (f *Figures) Run(ctx context.Context) {
	t := time.NewTicker(f.every)
	defer t.Stop()
	for {
		if f.watched() {
			f.gather(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-f.notify:
		}
	}
}

func (f *Figures) watched() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs) > 0 || time.Since(f.wantedAt) < time.Minute
}

// Want marks the figures as wanted (a metrics scrape) and returns the latest round, if any.
func (f *Figures) Want() (Snapshot, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if time.Since(f.wantedAt) >= time.Minute {
		select {
		case f.notify <- struct{}{}:
		default:
		}
	}
	f.wantedAt = time.Now()
	return f.last, f.ready
}

// Last returns the latest round and whether there has been one.
func (f *Figures) Last() (Snapshot, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last, f.ready
}

// Subscribe returns a channel that receives each new round (a slow reader skips rounds, never delays others)
// and a function to stop.
func (f *Figures) Subscribe() (<-chan Snapshot, func()) {
	ch := make(chan Snapshot, 1)
	f.mu.Lock()
	f.subs[ch] = struct{}{}
	f.mu.Unlock()
	select {
	case f.notify <- struct{}{}:
	default:
	}
	return ch, func() {
		f.mu.Lock()
		delete(f.subs, ch)
		f.mu.Unlock()
	}
}

func (f *Figures) gather(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	snap, err := f.read(ctx)
	f.mu.Lock()
	if err != nil {
		if f.log != nil && ctx.Err() == nil && !f.failing {
			f.log.Warn("console figures", "err", err)
		}
		snap = f.last
		snap.Error = "Some figures could not be read; showing the last ones."
	}
	f.failing = err != nil
	f.last, f.ready = snap, true
	for ch := range f.subs {
		select {
		case <-ch: // drop the unread round: the newest one replaces it
		default:
		}
		ch <- snap
	}
	f.mu.Unlock()
}

func (f *Figures) read(ctx context.Context) (Snapshot, error) {
	var snap Snapshot
	if err := f.get(ctx, "/admin/v1/stats", &snap); err != nil {
		return Snapshot{}, fmt.Errorf("booking stats: %w", err)
	}
	for i := range snap.Shows {
		sh := &snap.Shows[i]
		q, err := f.queues(ctx, sh.ShowID)
		if err != nil {
			return Snapshot{}, fmt.Errorf("queue of %s: %w", sh.ShowID, err)
		}
		sh.Queue = q
		if q.AdmittedTotal > 0 {
			sh.Conversion = float64(sh.Confirmed) / float64(q.AdmittedTotal)
		}
	}
	snap.At = time.Now().UTC()
	return snap, nil
}

// statusError is booking's answer other than 200 to one of the console's own reads.
type statusError struct{ status int }

func (e *statusError) Error() string { return fmt.Sprintf("status %d", e.status) }

// get reads booking's JSON answer at path (already escaped) with the operator token into out.
func (f *Figures) get(ctx context.Context, path string, out any) error {
	u := *f.bookingURL
	u.Path = strings.TrimRight(u.Path, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+f.adminToken)
	resp, err := f.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return &statusError{status: resp.StatusCode}
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(out)
}
