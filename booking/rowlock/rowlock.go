// Package rowlock is the classic design booking is measured against: seats as Postgres rows, and a hold as one
// transaction that locks the requested rows with SELECT ... FOR UPDATE, checks them, and marks them held. No
// Redis. It serves the same request shape as booking's hold (POST /api/v1/bookings/hold, {"showId","seatIds"},
// 201 or a 409 problem with "unavailable" and "alternatives"), so a benchmark or a load test can aim the same
// traffic at either.
//
// It is a baseline, not a product: no idempotency keys, no per-user cap, no waiting room, no expiry sweep (a
// held row whose held_until has passed simply counts as free).
package rowlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/problem"
)

const schema = `
CREATE TABLE IF NOT EXISTS rowlock_seats (
    show_id    text NOT NULL,
    seat_id    text NOT NULL,
    category   text NOT NULL,
    ord        integer NOT NULL,
    price      bigint NOT NULL,
    booking_id text,
    held_until timestamptz,
    PRIMARY KEY (show_id, seat_id)
);
CREATE TABLE IF NOT EXISTS rowlock_bookings (
    id           text PRIMARY KEY,
    user_id      text NOT NULL,
    show_id      text NOT NULL,
    seat_ids     text[] NOT NULL,
    total_amount bigint NOT NULL,
    expires_at   timestamptz NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);`

// setupLock serialises Setup across processes.
const setupLock int64 = 0x666c6173726f776c // "flasrowl"

// Store is the row-locking hold store.
type Store struct {
	pool *pgxpool.Pool
	ttl  time.Duration
	// OnError, when set, is told about internal errors (answered 500).
	OnError func(error)
}

// New returns a store on pool whose holds last ttl. Call Setup once first.
func New(pool *pgxpool.Pool, ttl time.Duration) *Store {
	if ttl <= 0 {
		ttl = 10 * time.Minute
	}
	return &Store{pool: pool, ttl: ttl}
}

// Setup creates the baseline's tables if missing.
func Setup(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", setupLock); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, schema)
		return err
	})
}

// CreateShow inserts a show's seats, priced, in map order.
func (s *Store) CreateShow(ctx context.Context, showID string, seats []booking.Seat) error {
	rows := make([][]any, len(seats))
	for i, st := range seats {
		rows[i] = []any{showID, st.ID, st.Category, i, st.Price}
	}
	_, err := s.pool.CopyFrom(ctx, pgx.Identifier{"rowlock_seats"},
		[]string{"show_id", "seat_id", "category", "ord", "price"}, pgx.CopyFromRows(rows))
	if err != nil {
		return fmt.Errorf("rowlock: create show: %w", err)
	}
	return nil
}

// Hold claims every seat or none in one transaction. Rows are locked in seat order, so two holds never wait on
// each other in a cycle.
func (s *Store) Hold(ctx context.Context, userID, showID string, seatIDs []string) (booking.Booking, error) {
	if len(seatIDs) == 0 || len(seatIDs) > 10 {
		return booking.Booking{}, booking.Unprocessable("1 to 10 seats")
	}
	b := booking.Booking{ID: booking.NewID("rl_"), UserID: userID, ShowID: showID, SeatIDs: seatIDs,
		Status: booking.StatusHeld}
	var taken []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT seat_id, price, held_until IS NOT NULL AND held_until > now()
			FROM rowlock_seats WHERE show_id = $1 AND seat_id = ANY($2) ORDER BY seat_id FOR UPDATE`, showID, seatIDs)
		if err != nil {
			return err
		}
		n := 0
		for rows.Next() {
			var id string
			var price int64
			var held bool
			if err := rows.Scan(&id, &price, &held); err != nil {
				rows.Close()
				return err
			}
			n++
			b.TotalAmount += price
			if held {
				taken = append(taken, id)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if n != len(seatIDs) {
			return booking.Unprocessable("unknown seats or show")
		}
		if len(taken) > 0 {
			return booking.ErrSeatsUnavailable
		}
		err = tx.QueryRow(ctx, `UPDATE rowlock_seats SET booking_id = $3, held_until = now() + $4::interval
			WHERE show_id = $1 AND seat_id = ANY($2) RETURNING held_until`, showID, seatIDs, b.ID, s.ttl).Scan(&b.ExpiresAt)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO rowlock_bookings (id, user_id, show_id, seat_ids, total_amount, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6)`, b.ID, userID, showID, seatIDs, b.TotalAmount, b.ExpiresAt)
		return err
	})
	if errors.Is(err, booking.ErrSeatsUnavailable) {
		return booking.Booking{}, &booking.ConflictError{Unavailable: taken, Alternatives: s.alternatives(ctx, showID, seatIDs)}
	}
	if err != nil {
		if errors.Is(err, booking.ErrValidation) {
			return booking.Booking{}, err
		}
		return booking.Booking{}, fmt.Errorf("rowlock: hold: %w", err)
	}
	return b, nil
}

// alternatives proposes the same number of free seats of the first seat's category nearest to it, as the
// classic design would with one more query.
func (s *Store) alternatives(ctx context.Context, showID string, seatIDs []string) []string {
	rows, err := s.pool.Query(ctx, `WITH want AS (SELECT category, ord FROM rowlock_seats WHERE show_id = $1 AND seat_id = $2)
		SELECT r.seat_id FROM rowlock_seats r, want w WHERE r.show_id = $1 AND r.category = w.category
			AND (r.held_until IS NULL OR r.held_until <= now()) ORDER BY abs(r.ord - w.ord) LIMIT $3`,
		showID, seatIDs[0], len(seatIDs))
	if err != nil {
		return []string{}
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(ids) < len(seatIDs) {
		return []string{}
	}
	return ids
}

type holdRequest struct {
	ShowID  string   `json:"showId"`
	SeatIDs []string `json:"seatIds"`
}

// Mount serves POST /api/v1/bookings/hold on r. auth must authenticate the caller and store its user id where
// userID finds it (booking/http's RequireUser and UserID do).
func (s *Store) Mount(r fiber.Router, auth fiber.Handler, userID func(*fiber.Ctx) string) {
	r.Post("/api/v1/bookings/hold", auth, func(c *fiber.Ctx) error {
		var req holdRequest
		if err := c.BodyParser(&req); err != nil {
			return problem.Send(c, problem.New(fiber.StatusBadRequest, problem.BadRequest, "the body is not valid JSON"))
		}
		b, err := s.Hold(c.UserContext(), userID(c), req.ShowID, req.SeatIDs)
		var ce *booking.ConflictError
		switch {
		case errors.As(err, &ce):
			return problem.Send(c, problem.New(fiber.StatusConflict, problem.SeatsUnavailable, "seats unavailable").
				With("unavailable", ce.Unavailable).With("alternatives", ce.Alternatives))
		case errors.Is(err, booking.ErrValidation):
			return problem.Send(c, problem.New(fiber.StatusUnprocessableEntity, problem.Validation, err.Error()))
		case err != nil:
			if s.OnError != nil {
				s.OnError(err)
			}
			return problem.Send(c, problem.New(fiber.StatusInternalServerError, problem.Internal, "internal error"))
		}
		return c.Status(fiber.StatusCreated).JSON(fiber.Map{"bookingId": b.ID, "status": b.Status, "showId": b.ShowID,
			"seatIds": b.SeatIDs, "expiresAt": b.ExpiresAt, "totalAmount": b.TotalAmount})
	})
}
