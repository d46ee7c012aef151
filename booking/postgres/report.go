package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/salereport"
)

// SaleReport implements booking.Store: the show's summary once it has one (report_keep.go), else its sale from
// its rows, read in one snapshot (a repeatable-read, read-only transaction), and the payment breaker's openings
// within it.
func (s *Store) SaleReport(ctx context.Context, showID string, now time.Time) (salereport.Report, error) {
	if r, ok, err := storedReport(ctx, s.pool, showID); ok || err != nil {
		return r, err
	}
	r, err := s.showSale(ctx, showID, now)
	if err != nil {
		return r, err
	}
	return r, breakerOpenings(ctx, s.pool, &r)
}

// RecordBreakerOpening implements booking.Store.
func (s *Store) RecordBreakerOpening(ctx context.Context, at time.Time) error {
	if _, err := s.pool.Exec(ctx, `INSERT INTO payment_breaker_openings (opened_at) VALUES ($1)`, at); err != nil {
		return fmt.Errorf("postgres: breaker opening: %w", err)
	}
	return nil
}

// minuteOf is the key a minute's count is kept under: its start, in UTC.
func minuteOf(t time.Time) time.Time { return t.UTC().Truncate(time.Minute) }

// saleQueries are the per-minute series, each a query of (minute, count) rows of the show $1. The minute is
// truncated in UTC whatever the session's time zone.
var saleQueries = []struct {
	name string
	sql  string
}{
	{"arrivals", `SELECT date_trunc('minute', joined_at AT TIME ZONE 'UTC'), count(*) FROM queue_joins
		WHERE show_id = $1 AND NOT shadow GROUP BY 1`},
	{"admitted", `SELECT date_trunc('minute', issued_at AT TIME ZONE 'UTC'), count(*) FROM queue_grants
		WHERE show_id = $1 GROUP BY 1`},
	{"holds", `SELECT date_trunc('minute', created_at AT TIME ZONE 'UTC'), count(*) FROM bookings
		WHERE show_id = $1 GROUP BY 1`},
	{"confirmed", `SELECT date_trunc('minute', p.created_at AT TIME ZONE 'UTC'), count(*) FROM payments p
		JOIN bookings b ON b.id = p.booking_id WHERE b.show_id = $1 GROUP BY 1`},
	{"refunds", `SELECT date_trunc('minute', created_at AT TIME ZONE 'UTC'), count(*) FROM refunds
		WHERE show_id = $1 GROUP BY 1`},
	{"refusals", `SELECT date_trunc('minute', minute AT TIME ZONE 'UTC'), sum(n)::bigint FROM queue_refusals
		WHERE show_id = $1 GROUP BY 1`},
}

// funnelSQL counts the fans at each step of the sale and those who gave up: joined and never paid, and admitted,
// with no admission live and not every one revoked (a kick is not a lapse), and never paid. $2 is now.
const funnelSQL = `WITH paid AS (SELECT DISTINCT b.user_id FROM bookings b JOIN payments p ON p.booking_id = b.id
		WHERE b.show_id = $1),
	adm AS (SELECT user_id, bool_or(expires_at > $2) AS live, bool_and(revoked_at IS NOT NULL) AS kicked
		FROM queue_grants WHERE show_id = $1 GROUP BY user_id),
	joined AS (SELECT user_id FROM queue_joins WHERE show_id = $1 AND NOT shadow)
	SELECT (SELECT count(*) FROM joined), (SELECT count(*) FROM adm),
		(SELECT count(DISTINCT user_id) FROM bookings WHERE show_id = $1), (SELECT count(*) FROM paid),
		(SELECT count(*) FROM joined j WHERE NOT EXISTS (SELECT 1 FROM paid p WHERE p.user_id = j.user_id)),
		(SELECT count(*) FROM adm a WHERE NOT a.live AND NOT a.kicked
			AND NOT EXISTS (SELECT 1 FROM paid p WHERE p.user_id = a.user_id)),
		(SELECT count(*) FROM queue_joins WHERE show_id = $1 AND shadow),
		(SELECT count(*) FILTER (WHERE status = 'CANCELLED') FROM bookings WHERE show_id = $1),
		(SELECT count(*) FILTER (WHERE status = 'EXPIRED') FROM bookings WHERE show_id = $1),
		(SELECT coalesce(sum(p.amount), 0)::bigint FROM payments p JOIN bookings b ON b.id = p.booking_id
			WHERE b.show_id = $1),
		(SELECT coalesce(sum(amount_due), 0)::bigint FROM refunds WHERE show_id = $1)`

// showSale reads everything of the report but the breaker's openings.
func (s *Store) showSale(ctx context.Context, showID string, now time.Time) (salereport.Report, error) {
	r := salereport.Report{ShowID: showID, GeneratedAt: now.UTC(), Refusals: map[string]int64{},
		Payments: salereport.Payments{Outcomes: map[string]int64{}, BreakerOpenedAt: []time.Time{}},
		Revenue:  salereport.Revenue{ByCategory: map[string]int64{}, Seats: map[string]int64{}}}
	series := map[string]map[time.Time]int64{}
	var left map[time.Time]int64
	var opens time.Time
	var waits []float64
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error {
			err := tx.QueryRow(ctx, `SELECT e.title, s.currency, s.sale_starts_at FROM shows s
				JOIN events e ON e.id = s.event_id WHERE s.id = $1`, showID).Scan(&r.Title, &r.Revenue.Currency, &opens)
			if err != nil {
				return notFound("show", showID, err)
			}
			for _, q := range saleQueries {
				if series[q.name], err = counts(ctx, tx, q.sql, showID); err != nil {
					return fmt.Errorf("%s: %w", q.name, err)
				}
			}
			if left, waits, err = inLine(ctx, tx, showID, opens); err != nil {
				return err
			}
			f, a := &r.Funnel, &r.Abandoned
			if err := tx.QueryRow(ctx, funnelSQL, showID, now).Scan(&f.Joined, &f.Admitted, &f.Held, &f.Bought,
				&a.JoinedNeverBought, &a.AdmittedLapsed, &r.Bots.Shadowed, &r.Cancelled, &r.Expired,
				&r.Revenue.Gross, &r.Revenue.Refunded); err != nil {
				return fmt.Errorf("funnel: %w", err)
			}
			return s.saleTotals(ctx, tx, showID, &r)
		})
	if err != nil {
		if errors.Is(err, booking.ErrNotFound) {
			return r, err
		}
		return r, fmt.Errorf("postgres: sale report %s: %w", showID, err)
	}
	r.Revenue.Net = r.Revenue.Gross - r.Revenue.Refunded
	r.WaitSeconds = salereport.WaitsOf(waits)
	r.From, r.To = span(series, minuteOf(opens))
	r.Arrivals = salereport.Minutes(r.From, r.To, series["arrivals"])
	r.QueueLength = salereport.Cumulative(r.From, r.To, series["arrivals"], left)
	r.Admitted = salereport.Minutes(r.From, r.To, series["admitted"])
	r.Holds = salereport.Minutes(r.From, r.To, series["holds"])
	r.Confirmed = salereport.Minutes(r.From, r.To, series["confirmed"])
	r.Refunds = salereport.Minutes(r.From, r.To, series["refunds"])
	return r, nil
}

// saleTotals reads the refusals by reason, the pay attempts by outcome and the seats sold by category.
func (s *Store) saleTotals(ctx context.Context, tx pgx.Tx, showID string, r *salereport.Report) error {
	rows, err := tx.Query(ctx, `SELECT reason, sum(n)::bigint, bool_or(suspect) FROM queue_refusals
		WHERE show_id = $1 GROUP BY reason`, showID)
	if err != nil {
		return fmt.Errorf("refusals: %w", err)
	}
	var reason string
	var n int64
	var suspect bool
	if _, err := pgx.ForEachRow(rows, []any{&reason, &n, &suspect}, func() error {
		r.Refusals[reason] = n
		if suspect {
			r.Bots.Refused += n
		}
		return nil
	}); err != nil {
		return fmt.Errorf("refusals: %w", err)
	}
	rows, err = tx.Query(ctx, `SELECT coalesce(pa.outcome, pa.state), count(*) FROM payment_attempts pa
		JOIN bookings b ON b.id = pa.booking_id WHERE b.show_id = $1 GROUP BY 1`, showID)
	if err != nil {
		return fmt.Errorf("payments: %w", err)
	}
	if _, err := pgx.ForEachRow(rows, []any{&reason, &n}, func() error {
		r.Payments.Outcomes[reason] = n
		r.Payments.Attempts += n
		return nil
	}); err != nil {
		return fmt.Errorf("payments: %w", err)
	}
	rows, err = tx.Query(ctx, `SELECT st.category, count(*), coalesce(sum((s.prices ->> st.category)::bigint), 0)::bigint
		FROM sold_seats ss JOIN shows s ON s.id = ss.show_id
		JOIN seats st ON st.hall_id = s.hall_id AND st.seat_id = ss.seat_id
		WHERE ss.show_id = $1 GROUP BY 1`, showID)
	if err != nil {
		return fmt.Errorf("revenue: %w", err)
	}
	var seats, amount int64
	if _, err := pgx.ForEachRow(rows, []any{&reason, &seats, &amount}, func() error {
		r.Revenue.Seats[reason], r.Revenue.ByCategory[reason] = seats, amount
		return nil
	}); err != nil {
		return fmt.Errorf("revenue: %w", err)
	}
	return nil
}

// counts reads (minute, count) rows.
func counts(ctx context.Context, tx pgx.Tx, sql, showID string) (map[time.Time]int64, error) {
	rows, err := tx.Query(ctx, sql, showID)
	if err != nil {
		return nil, err
	}
	out := map[time.Time]int64{}
	var t time.Time
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&t, &n}, func() error {
		out[minuteOf(t)] += n
		return nil
	})
	return out, err
}

// inLine reads, for every fan who joined and was admitted, when they left the line (their first admission, by
// minute) and how long they waited in it: from their place, or from the opening for a fan who joined before it.
func inLine(ctx context.Context, tx pgx.Tx, showID string, opens time.Time) (map[time.Time]int64, []float64, error) {
	rows, err := tx.Query(ctx, `SELECT j.joined_at, g.first FROM queue_joins j
		JOIN (SELECT user_id, min(issued_at) AS first FROM queue_grants WHERE show_id = $1 GROUP BY user_id) g
			ON g.user_id = j.user_id
		WHERE j.show_id = $1 AND NOT j.shadow`, showID)
	if err != nil {
		return nil, nil, fmt.Errorf("waits: %w", err)
	}
	left := map[time.Time]int64{}
	var waits []float64
	var joined, first time.Time
	if _, err := pgx.ForEachRow(rows, []any{&joined, &first}, func() error {
		left[minuteOf(first)]++
		// An admission is recorded to the second (its token's iat), so one in the second of the place is the
		// place's. One before it (a bypass code, then a join) is no wait in line.
		if from := later(joined, opens); !first.Before(joined.Truncate(time.Second)) {
			waits = append(waits, max(0, first.Sub(from).Seconds()))
		}
		return nil
	}); err != nil {
		return nil, nil, fmt.Errorf("waits: %w", err)
	}
	return left, waits, nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// span is the first and last minute any series has a count in; a sale with none spans the opening's minute.
func span(series map[string]map[time.Time]int64, opening time.Time) (from, to time.Time) {
	for _, s := range series {
		for t := range s {
			if from.IsZero() || t.Before(from) {
				from = t
			}
			if t.After(to) {
				to = t
			}
		}
	}
	if from.IsZero() {
		return opening, opening
	}
	return from, to
}

// breakerOpenings fills in the payment breaker's openings within the report's minutes, from db (the catalog's
// database: the breaker is a replica's, not a show's).
func breakerOpenings(ctx context.Context, db *pgxpool.Pool, r *salereport.Report) error {
	rows, err := db.Query(ctx, `SELECT opened_at FROM payment_breaker_openings
		WHERE opened_at >= $1 AND opened_at < $2 ORDER BY opened_at`, r.From, r.To.Add(time.Minute))
	if err != nil {
		return fmt.Errorf("postgres: breaker openings: %w", err)
	}
	at, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	if err != nil {
		return fmt.Errorf("postgres: breaker openings: %w", err)
	}
	for _, t := range at {
		r.Payments.BreakerOpenedAt = append(r.Payments.BreakerOpenedAt, t.UTC())
	}
	r.Payments.BreakerOpenings = int64(len(at))
	return nil
}

// SaleReport reads the show's sale from its shard, and the payment breaker's openings from the catalog.
func (s *Shards) SaleReport(ctx context.Context, showID string, now time.Time) (salereport.Report, error) {
	if r, ok, err := storedReport(ctx, s.At(showID).pool, showID); ok || err != nil {
		return r, err
	}
	r, err := s.At(showID).showSale(ctx, showID, now)
	if err != nil {
		return r, err
	}
	return r, breakerOpenings(ctx, s.catalog.pool, &r)
}

// RecordBreakerOpening records on the catalog: the breaker is a replica's, not a show's.
func (s *Shards) RecordBreakerOpening(ctx context.Context, at time.Time) error {
	return s.catalog.RecordBreakerOpening(ctx, at)
}
