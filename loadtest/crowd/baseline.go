package crowd

import (
	"context"
	"net/url"

	"github.com/google/uuid"

	"github.com/flashseat/flashseat/loadtest/client"
)

// Routes of the row-lock baseline: the classic design (one Postgres transaction, SELECT ... FOR UPDATE on every
// requested seat row, no Redis), served beside the real hold API with the same request and answers.
const (
	baselineHoldPath    = "/baseline/v1/bookings/hold"
	baselineReleasePath = "/baseline/v1/bookings/"
)

type rowLock struct{ c *client.Client }

// RowLock is the baseline Holder served at c.
func RowLock(c *client.Client) Holder { return rowLock{c} }

func (h rowLock) Hold(ctx context.Context, user, showID string, seatIDs []string) (string, client.Result, error) {
	b, res, err := h.c.HoldAt(ctx, baselineHoldPath, user, showID, seatIDs, uuid.NewString())
	return b.BookingID, res, err
}

func (h rowLock) Release(ctx context.Context, user, _, bookingID string) (client.Result, error) {
	return h.c.DeleteAt(ctx, baselineReleasePath+url.PathEscape(bookingID), user)
}
