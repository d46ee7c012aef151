package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/audit"
)

// Row is one row of a hall layout.
type Row struct {
	Row      string `json:"row"`
	Seats    int    `json:"seats"`
	Category string `json:"category"`
}

// Hall is a hall to create.
type Hall struct {
	Name string `json:"name"`
	Rows []Row  `json:"rows"`
}

// Venue is POST /admin/v1/venues's request.
type Venue struct {
	Name  string `json:"name"`
	City  string `json:"city"`
	Halls []Hall `json:"halls"`
}

// CreatedVenue is its answer.
type CreatedVenue struct {
	VenueID string `json:"venueId"`
	Halls   []struct {
		HallID string `json:"hallId"`
		Name   string `json:"name"`
		Seats  int    `json:"seats"`
	} `json:"halls"`
}

// Event is POST /admin/v1/events's request.
type Event struct {
	Title           string `json:"title"`
	Kind            string `json:"kind"`
	Genre           string `json:"genre"`
	Language        string `json:"language"`
	DurationMinutes int    `json:"durationMinutes"`
}

// Show is POST /admin/v1/shows's request.
type Show struct {
	EventID      string           `json:"eventId"`
	HallID       string           `json:"hallId"`
	StartsAt     time.Time        `json:"startsAt"`
	SaleStartsAt time.Time        `json:"saleStartsAt"`
	Currency     string           `json:"currency"`
	Prices       map[string]int64 `json:"prices"`
}

// QueueSettings is the body of PUT /admin/v1/shows/{id}/queue; GET adds the counters.
type QueueSettings struct {
	Enabled         bool    `json:"enabled"`
	Paused          bool    `json:"paused"`
	AdmitPerSecond  float64 `json:"admitPerSecond"`
	MaxActive       int     `json:"maxActive"`
	TokenTTLSeconds int     `json:"tokenTtlSeconds"`
	// BotProtection, when set, is sent with the settings: its members that are set change, the others keep
	// their value. GET and PUT answer the show's whole bot protection.
	BotProtection *BotProtection `json:"botProtection,omitempty"`
	// Autotune, when set, is sent with the settings (all of it); GET and PUT answer the show's autotune, and
	// AutotuneReason why autotune set the rate in force (empty: an operator set it).
	Autotune       *admission.Autotune `json:"autotune,omitempty"`
	AutotuneReason string              `json:"autotuneReason,omitempty"`
	// WhenStoreDown, when set, is sent with the settings: what the queue does while its Redis is down (closed,
	// or a trickle per edge replica). GET and PUT answer it.
	WhenStoreDown *admission.StoreDown `json:"whenStoreDown,omitempty"`
	// Mode is "off", "always" or "threshold"; empty leaves it to Enabled (always or off). In mode "threshold" PUT
	// sends the three limits too, the arrivals' and the cooldown's zeros included (0 arrivals: never engage on
	// arrivals).
	Mode                       string `json:"mode,omitempty"`
	ActiveUsersThreshold       int    `json:"activeUsersThreshold,omitempty"`
	NewUsersPerMinuteThreshold int    `json:"newUsersPerMinuteThreshold,omitempty"`
	CooldownSeconds            int    `json:"cooldownSeconds,omitempty"`
	// Partitions, when above 0, is sent with the settings: the queue split over that many lines (1-64, only
	// while nobody waits). GET and PUT answer the count in force.
	Partitions int `json:"partitions,omitempty"`
	// Lanes, when set, is sent with the settings: the admission rate shared between lanes by weight (names
	// only while nobody waits). GET answers each lane with its figures.
	Lanes []Lane `json:"lanes,omitempty"`

	Waiting       int `json:"waiting,omitempty"`
	Active        int `json:"active,omitempty"`
	AdmittedTotal int `json:"admittedTotal,omitempty"`
	SkippedTotal  int `json:"skippedTotal,omitempty"` // passed over at the head of the line, absent
	// Engaged: fans wait in line now (in threshold mode, while the queue is engaged). ActiveUsers is the live
	// admissions and ArrivalsPerMinute the arrivals over the last minute, the figures threshold mode watches.
	Engaged           bool  `json:"engaged,omitempty"`
	ActiveUsers       int64 `json:"activeUsers,omitempty"`
	ArrivalsPerMinute int64 `json:"arrivalsPerMinute,omitempty"`
}

// BotProtection is a show's bot protection as the operator API speaks it (shared/admission's BotProtection):
// what a new place in the queue costs. Members left zero are not sent.
type BotProtection struct {
	Enabled            *bool   `json:"enabled,omitempty"`
	BaseDifficulty     int64   `json:"baseDifficulty,omitempty"`
	MaxDifficulty      int64   `json:"maxDifficulty,omitempty"`
	FreeChallenges     float64 `json:"freeChallenges,omitempty"`
	DoublingChallenges float64 `json:"doublingChallenges,omitempty"`
	HalfLifeSeconds    int     `json:"halfLifeSeconds,omitempty"`
	LoadJoinsPerMinute int     `json:"loadJoinsPerMinute,omitempty"`
	PrefixPlaces       int     `json:"prefixPlaces,omitempty"`
	Suspects           string  `json:"suspects,omitempty"`
}

// On reports whether the protection is on: Enabled, or unsaid (the server's default is on).
func (b *BotProtection) On() bool { return b == nil || b.Enabled == nil || *b.Enabled }

// BotFigures is GET /admin/v1/shows/{id}/bots: what the show's bot protection did.
type BotFigures struct {
	Issued        int64            `json:"challengesIssued"`
	Solved        int64            `json:"challengesSolved"`
	Failed        int64            `json:"challengesFailed"`
	MedianSolveMs int64            `json:"medianSolveMs"`
	Shadowed      int64            `json:"shadowed"`
	Refused       map[string]int64 `json:"refusedByReason"`
	TopPrefixes   []PrefixPlaces   `json:"topPrefixes"`
}

// PrefixPlaces is an address prefix's count of places taken.
type PrefixPlaces struct {
	Prefix string `json:"prefix"`
	Places int64  `json:"places"`
}

// ShowStats is GET /admin/v1/shows/{id}/stats.
type ShowStats struct {
	TotalSeats     int   `json:"totalSeats"`
	Available      int   `json:"available"`
	Held           int   `json:"held"`
	Booked         int   `json:"booked"`
	Revenue        int64 `json:"revenue"`
	HoldsTotal     int64 `json:"holdsTotal"`
	ConflictsTotal int64 `json:"conflictsTotal"`
}

// ShowDetail is GET /api/v1/shows/{id}.
type ShowDetail struct {
	ShowID         string           `json:"showId"`
	EventID        string           `json:"eventId"`
	Title          string           `json:"title"`
	StartsAt       time.Time        `json:"startsAt"`
	SaleStartsAt   time.Time        `json:"saleStartsAt"`
	Currency       string           `json:"currency"`
	Prices         map[string]int64 `json:"prices"`
	AvailableSeats int              `json:"availableSeats"`
	TotalSeats     int              `json:"totalSeats"`
	QueueEnabled   bool             `json:"queueEnabled"`
}

func expect(what string, res Result, err error, want int) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if res.Status != want {
		detail := ""
		if res.Problem != nil {
			detail = ": " + res.Problem.Detail
		}
		return fmt.Errorf("%s: status %d, want %d%s", what, res.Status, want, detail)
	}
	return nil
}

// CreateVenue creates a venue with its halls.
func (c *Client) CreateVenue(ctx context.Context, v Venue) (CreatedVenue, error) {
	var out CreatedVenue
	res, err := c.do(ctx, call{method: http.MethodPost, path: "/admin/v1/venues", bearer: c.adminToken, body: v, out: &out})
	return out, expect("create venue", res, err, http.StatusCreated)
}

// CreateEvent creates an event and returns its id.
func (c *Client) CreateEvent(ctx context.Context, e Event) (string, error) {
	var out struct {
		EventID string `json:"eventId"`
	}
	res, err := c.do(ctx, call{method: http.MethodPost, path: "/admin/v1/events", bearer: c.adminToken, body: e, out: &out})
	return out.EventID, expect("create event", res, err, http.StatusCreated)
}

// CreateShow creates a show and returns its id.
func (c *Client) CreateShow(ctx context.Context, s Show) (string, error) {
	var out struct {
		ShowID string `json:"showId"`
	}
	res, err := c.do(ctx, call{method: http.MethodPost, path: "/admin/v1/shows", bearer: c.adminToken, body: s, out: &out})
	return out.ShowID, expect("create show", res, err, http.StatusCreated)
}

// Lane is one lane of a show's queue: its name and share, and in GET's answer its figures.
type Lane struct {
	Name     string  `json:"name"`
	Share    float64 `json:"share"`
	Waiting  int     `json:"waiting,omitempty"`
	Active   int     `json:"active,omitempty"`
	Admitted int     `json:"admitted,omitempty"`
}

// PutQueue sets a show's waiting-room settings.
func (c *Client) PutQueue(ctx context.Context, showID string, q QueueSettings) (QueueSettings, error) {
	var out QueueSettings
	body := map[string]any{"enabled": q.Enabled, "admitPerSecond": q.AdmitPerSecond, "maxActive": q.MaxActive,
		"tokenTtlSeconds": q.TokenTTLSeconds}
	if q.Mode != "" {
		body["mode"] = q.Mode
	}
	if q.Mode == "threshold" {
		body["activeUsersThreshold"], body["newUsersPerMinuteThreshold"] = q.ActiveUsersThreshold, q.NewUsersPerMinuteThreshold
		body["cooldownSeconds"] = q.CooldownSeconds
	}
	if q.BotProtection != nil {
		body["botProtection"] = q.BotProtection
	}
	if q.Autotune != nil {
		body["autotune"] = q.Autotune
	}
	if q.WhenStoreDown != nil {
		body["whenStoreDown"] = q.WhenStoreDown
	}
	if q.Partitions > 0 {
		body["partitions"] = q.Partitions
	}
	if q.Lanes != nil {
		body["lanes"] = q.Lanes
	}
	if q.Paused {
		body["paused"] = true // a PUT that leaves paused out keeps the pause as it is; Pause lifts it
	}
	res, err := c.do(ctx, call{method: http.MethodPut, path: "/admin/v1/shows/" + url.PathEscape(showID) + "/queue",
		bearer: c.adminToken, body: body, out: &out})
	return out, expect("put queue", res, err, http.StatusOK)
}

// Pause pauses or resumes a show's admission (PUT with "paused" alone): the other settings keep their value.
func (c *Client) Pause(ctx context.Context, showID string, paused bool) error {
	res, err := c.do(ctx, call{method: http.MethodPut, path: "/admin/v1/shows/" + url.PathEscape(showID) + "/queue",
		bearer: c.adminToken, body: map[string]any{"paused": paused}})
	return expect("pause queue", res, err, http.StatusOK)
}

// ResalePolicy is a show's face-value exchange: open at all, the highest price as a share of face value (at
// most 1), and the share of the price kept as a fee.
type ResalePolicy struct {
	Enabled       bool    `json:"enabled"`
	MaxPriceRatio float64 `json:"maxPriceRatio"`
	FeePercent    float64 `json:"feePercent"`
}

// SetResalePolicy sets a show's exchange (PUT /admin/v1/shows/{id} with "resalePolicy" alone: the show's other
// ticket policies keep their value).
func (c *Client) SetResalePolicy(ctx context.Context, showID string, p ResalePolicy) error {
	res, err := c.do(ctx, call{method: http.MethodPut, path: "/admin/v1/shows/" + url.PathEscape(showID),
		bearer: c.adminToken, body: map[string]any{"resalePolicy": p}})
	return expect("put resale policy", res, err, http.StatusOK)
}

// Bots reads what a show's bot protection did.
func (c *Client) Bots(ctx context.Context, showID string) (BotFigures, error) {
	var out BotFigures
	res, err := c.do(ctx, call{method: http.MethodGet, path: "/admin/v1/shows/" + url.PathEscape(showID) + "/bots",
		bearer: c.adminToken, out: &out})
	return out, expect("bot figures", res, err, http.StatusOK)
}

// Queue reads a show's waiting-room settings and counters.
func (c *Client) Queue(ctx context.Context, showID string) (QueueSettings, error) {
	out, res, err := c.QueueView(ctx, showID)
	return out, expect("get queue", res, err, http.StatusOK)
}

// QueueView is Queue with the server's answer as it came, for a caller that counts statuses.
func (c *Client) QueueView(ctx context.Context, showID string) (QueueSettings, Result, error) {
	var out QueueSettings
	res, err := c.do(ctx, call{method: http.MethodGet, path: "/admin/v1/shows/" + url.PathEscape(showID) + "/queue",
		bearer: c.adminToken, out: &out})
	return out, res, err
}

// Audit reads a show's operator audit log since a time, newest first: the entries of the actions named (all
// when none), at most 1,000.
func (c *Client) Audit(ctx context.Context, showID string, since time.Time, actions ...string) ([]audit.Entry, error) {
	q := url.Values{"showId": {showID}, "since": {since.UTC().Format(time.RFC3339Nano)}, "limit": {"1000"}}
	if len(actions) > 0 {
		q.Set("action", strings.Join(actions, ","))
	}
	var out struct {
		Entries []audit.Entry `json:"entries"`
	}
	res, err := c.do(ctx, call{method: http.MethodGet, path: "/admin/v1/audit", query: q, bearer: c.adminToken, out: &out})
	return out.Entries, expect("audit", res, err, http.StatusOK)
}

// Stats reads a show's seat counters.
func (c *Client) Stats(ctx context.Context, showID string) (ShowStats, error) {
	var out ShowStats
	res, err := c.do(ctx, call{method: http.MethodGet, path: "/admin/v1/shows/" + url.PathEscape(showID) + "/stats",
		bearer: c.adminToken, out: &out})
	return out, expect("show stats", res, err, http.StatusOK)
}

// Show reads a show's public detail.
func (c *Client) Show(ctx context.Context, showID string) (ShowDetail, error) {
	var out ShowDetail
	res, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/shows/" + url.PathEscape(showID), out: &out})
	return out, expect("show", res, err, http.StatusOK)
}
