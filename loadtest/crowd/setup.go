package crowd

import (
	"context"
	"fmt"
	"time"

	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/loadtest/client"
)

// Prices of the hall the run creates, in paise.
var prices = map[string]int64{"SILVER": 25000, "GOLD": 45000, "PLATINUM": 80000}

// Layout is the hall a scenario plays in: rows of 20 seats (50 for large halls), the front 30% SILVER, the back
// 20% PLATINUM and GOLD between, like the demo hall.
func Layout(seats int) []client.Row {
	perRow := 20
	if seats > 1000 {
		perRow = 50
	}
	n := (seats + perRow - 1) / perRow
	rows := make([]client.Row, 0, n)
	for i := 0; i < n; i++ {
		cnt := perRow
		if rem := seats - i*perRow; rem < perRow {
			cnt = rem
		}
		cat := "GOLD"
		switch {
		case i < n*3/10:
			cat = "SILVER"
		case i >= n-n/5:
			cat = "PLATINUM"
		}
		rows = append(rows, client.Row{Row: RowName(i), Seats: cnt, Category: cat})
	}
	return rows
}

// RowName is A..Z, then AA, AB, ... as halls name rows.
func RowName(i int) string {
	name := ""
	for i >= 0 {
		name = string(rune('A'+i%26)) + name
		i = i/26 - 1
	}
	return name
}

// Setup creates what the scenario plays against through the operator API: a venue with one hall of the scenario's
// seats, an event, and a show whose sale opens SaleDelay from now; then it switches the show's queue on (or off
// for a hold-storm). It returns the show and the instant its sale opens.
func Setup(ctx context.Context, c *client.Client, sc loadtest.Scenario, runID string) (string, time.Time, error) {
	rows := Layout(sc.Seats)
	// Only the hall's own categories get a price: booking refuses a price for a category the hall lacks.
	showPrices := map[string]int64{}
	for _, r := range rows {
		showPrices[r.Category] = prices[r.Category]
	}
	v, err := c.CreateVenue(ctx, client.Venue{
		Name: "Loadtest Arena " + runID, City: "Loadtest",
		Halls: []client.Hall{{Name: "Hall " + runID, Rows: rows}},
	})
	if err != nil {
		return "", time.Time{}, err
	}
	if len(v.Halls) == 0 {
		return "", time.Time{}, fmt.Errorf("create venue: no hall in the answer")
	}
	ev, err := c.CreateEvent(ctx, client.Event{Title: "Flash Premiere " + runID, Kind: "MOVIE", Genre: "Action",
		Language: "English", DurationMinutes: 150})
	if err != nil {
		return "", time.Time{}, err
	}
	now := time.Now().UTC()
	// Whole seconds: RFC 3339 without fractions is what every parser accepts, and the extra second keeps the
	// opening in the future however long the request takes.
	opens := now.Truncate(time.Second).Add(sc.SaleDelay + time.Second)
	showID, err := c.CreateShow(ctx, client.Show{
		EventID: ev, HallID: v.Halls[0].HallID,
		StartsAt:     now.Truncate(time.Hour).Add(30 * 24 * time.Hour),
		SaleStartsAt: opens, Currency: "INR", Prices: showPrices,
	})
	if err != nil {
		return "", time.Time{}, err
	}
	// A new show's queue is off: a hold-storm leaves it so, which also lets it aim at booking directly (the
	// queue's operator route is the edge's).
	if sc.Mode == loadtest.ModeQueue {
		if err := ConfigureQueue(ctx, c, sc, showID); err != nil {
			return "", time.Time{}, err
		}
	}
	return showID, opens, nil
}

// ConfigureQueue switches the show's waiting room on with the scenario's rate and bot protection, or off for a
// hold-storm. The bot protection is stated, never left to the platform's default, and read back: a platform that
// did not apply it fails the setup rather than let the run report a difficulty it did not play at.
func ConfigureQueue(ctx context.Context, c *client.Client, sc loadtest.Scenario, showID string) error {
	q := client.QueueSettings{Enabled: sc.Mode == loadtest.ModeQueue, AdmitPerSecond: sc.AdmitPerSecond,
		MaxActive: sc.MaxActive, TokenTTLSeconds: int(sc.TokenTTL / time.Second)}
	if !q.Enabled {
		// The settings still have to be valid numbers even when the queue is off.
		q.AdmitPerSecond, q.MaxActive, q.TokenTTLSeconds = 100, 100, 60
	} else {
		on := true
		q.BotProtection = &client.BotProtection{Enabled: &on, BaseDifficulty: sc.BotDifficulty}
	}
	got, err := c.PutQueue(ctx, showID, q)
	if err != nil || !q.Enabled {
		return err
	}
	if b := got.BotProtection; b == nil || !b.On() || b.BaseDifficulty != sc.BotDifficulty {
		return fmt.Errorf("put queue: the platform answered bot protection %s, want on at base difficulty %d",
			describeBots(b), sc.BotDifficulty)
	}
	return nil
}

func describeBots(b *client.BotProtection) string {
	switch {
	case b == nil:
		return "unsaid"
	case !b.On():
		return "off"
	}
	return fmt.Sprintf("on at base difficulty %d", b.BaseDifficulty)
}
