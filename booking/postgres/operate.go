package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flashseat/flashseat/booking"
)

// ShowFigures implements booking.Store: the shows not started more than six hours before now, with their
// revenue, confirmed bookings and failed pay attempts, in one query.
func (s *Store) ShowFigures(ctx context.Context, now time.Time) ([]booking.ShowOverview, error) {
	return collectLagging(ctx, s, "show figures", func(r pgx.CollectableRow) (booking.ShowOverview, error) {
		var o booking.ShowOverview
		sh, err := scanShow(figureRow{r, &o})
		o.Show = sh
		return o, err
	}, `SELECT `+showColumns+`,
			COALESCE(b.revenue, 0)::bigint, COALESCE(b.confirmed, 0)::int, COALESCE(f.failures, 0)::int`+showFrom+`
		LEFT JOIN LATERAL (SELECT sum(total_amount) AS revenue, count(*) AS confirmed FROM bookings
			WHERE show_id = s.id AND status = 'CONFIRMED') b ON true
		LEFT JOIN LATERAL (SELECT count(*) AS failures FROM payment_attempts pa JOIN bookings bk ON bk.id = pa.booking_id
			WHERE bk.show_id = s.id AND pa.outcome IN ('DECLINED', 'FAILED')) f ON true
		WHERE s.starts_at > $1 ORDER BY s.starts_at, s.id LIMIT 500`, now.Add(-6*time.Hour))
}

// figureRow scans a show row followed by the overview's three figures into o.
type figureRow struct {
	pgx.Row
	o *booking.ShowOverview
}

func (f figureRow) Scan(dest ...any) error {
	return f.Row.Scan(append(dest, &f.o.Revenue, &f.o.Confirmed, &f.o.PaymentFailures)...)
}

// SetSaleStart implements booking.Store.
func (s *Store) SetSaleStart(ctx context.Context, showID string, at time.Time) (booking.Show, error) {
	return s.updateShow(ctx, showID, `UPDATE shows SET sale_starts_at = $2 WHERE id = $1`, at)
}

// CloseSale implements booking.Store. The first close's time is kept.
func (s *Store) CloseSale(ctx context.Context, showID string, at time.Time) (booking.Show, error) {
	return s.updateShow(ctx, showID, `UPDATE shows SET sale_closed_at = COALESCE(sale_closed_at, $2) WHERE id = $1`, at)
}

func (s *Store) updateShow(ctx context.Context, showID, update string, at time.Time) (booking.Show, error) {
	tag, err := s.pool.Exec(ctx, update, showID, at)
	if err != nil {
		return booking.Show{}, fmt.Errorf("postgres: update show: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return booking.Show{}, fmt.Errorf("show %s: %w", showID, booking.ErrNotFound)
	}
	return s.Show(ctx, showID)
}

// UserBookings implements booking.Store.
func (s *Store) UserBookings(ctx context.Context, userID string, limit int) ([]booking.Booking, error) {
	return collectLagging(ctx, s, "user bookings", scanBookingRow, `SELECT `+bookingColumns+` FROM bookings
		WHERE user_id = $1 ORDER BY created_at DESC, id LIMIT $2`, userID, limit)
}
