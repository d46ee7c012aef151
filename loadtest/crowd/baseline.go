package crowd

import (
	"context"
	"errors"

	"github.com/flashseat/flashseat/loadtest/client"
)

// Baseline is the classic design a hold-storm is also played against: somewhere to create a show with the
// platform show's seats, and its hold route.
type Baseline interface {
	NewShow(ctx context.Context, seats []client.Seat) (string, error)
	URL() string
}

// errNoRelease says a holder cannot cancel a hold (the row-lock baseline has no such route).
var errNoRelease = errors.New("crowd: this design cannot release a hold")

// rowLock storms the baseline's hold route, which takes the platform's request and answers.
type rowLock struct{ c *client.Client }

func (h rowLock) Hold(ctx context.Context, user, showID string, seatIDs []string) (string, client.Result, error) {
	b, res, err := h.c.HoldAt(ctx, "/api/v1/bookings/hold", user, showID, seatIDs, "")
	return b.BookingID, res, err
}

func (h rowLock) Release(context.Context, string, string, string) (client.Result, error) {
	return client.Result{}, errNoRelease
}
