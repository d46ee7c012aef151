package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flashseat/flashseat/booking"
)

// CreateVenue stores a venue, its halls and every seat of their layouts in one transaction.
func (s *Store) CreateVenue(ctx context.Context, v *booking.Venue) error {
	v.ID = booking.NewID("vn_")
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO venues (id, name, city) VALUES ($1, $2, $3)`, v.ID, v.Name, v.City); err != nil {
			return fmt.Errorf("postgres: create venue: %w", err)
		}
		for i := range v.Halls {
			h := &v.Halls[i]
			h.ID, h.VenueID = booking.NewID("hl_"), v.ID
			if _, err := tx.Exec(ctx, `INSERT INTO halls (id, venue_id, name, total_seats) VALUES ($1, $2, $3, $4)`,
				h.ID, v.ID, h.Name, h.Seats()); err != nil {
				return fmt.Errorf("postgres: create hall: %w", err)
			}
			rows := make([][]any, 0, h.Seats())
			for _, r := range h.Rows {
				for n := 1; n <= r.Seats; n++ {
					rows = append(rows, []any{h.ID, booking.SeatID(r.Label, n), r.Label, n, r.Category, len(rows)})
				}
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"seats"},
				[]string{"hall_id", "seat_id", "row_label", "number", "category", "ord"}, pgx.CopyFromRows(rows)); err != nil {
				return fmt.Errorf("postgres: create seats: %w", err)
			}
		}
		return nil
	})
}

// CreateEvent stores an event.
func (s *Store) CreateEvent(ctx context.Context, e *booking.Event) error {
	e.ID = booking.NewID("ev_")
	_, err := s.pool.Exec(ctx, `INSERT INTO events (id, title, kind, genre, language, duration_minutes)
		VALUES ($1, $2, $3, $4, $5, $6)`, e.ID, e.Title, e.Kind, e.Genre, e.Language, e.DurationMinutes)
	if err != nil {
		return fmt.Errorf("postgres: create event: %w", err)
	}
	return nil
}

// CreateShow stores a show after checking that its event and hall exist and that its prices cover exactly the
// hall's seat categories.
func (s *Store) CreateShow(ctx context.Context, sh *booking.Show) error {
	sh.ID = booking.NewID("sh_")
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var ok bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE id = $1)`, sh.EventID).Scan(&ok); err != nil {
			return fmt.Errorf("postgres: create show: %w", err)
		}
		if !ok {
			return booking.Unprocessable("event %s does not exist", sh.EventID)
		}
		rows, err := tx.Query(ctx, `SELECT DISTINCT category FROM seats WHERE hall_id = $1`, sh.HallID)
		if err != nil {
			return fmt.Errorf("postgres: create show: %w", err)
		}
		cats, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("postgres: create show: %w", err)
		}
		if len(cats) == 0 {
			return booking.Unprocessable("hall %s does not exist", sh.HallID)
		}
		sort.Strings(cats)
		for _, c := range cats {
			if _, ok := sh.Prices[c]; !ok {
				return booking.Unprocessable("prices lack category %s of the hall (it has %s)", c, strings.Join(cats, ", "))
			}
		}
		if len(sh.Prices) != len(cats) {
			return booking.Unprocessable("prices name categories the hall does not have (it has %s)", strings.Join(cats, ", "))
		}
		prices, _ := json.Marshal(sh.Prices)
		if _, err := tx.Exec(ctx, `INSERT INTO shows (id, event_id, hall_id, starts_at, sale_starts_at, currency, prices)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, sh.ID, sh.EventID, sh.HallID, sh.StartsAt, sh.SaleStartsAt,
			sh.Currency, prices); err != nil {
			return fmt.Errorf("postgres: create show: %w", err)
		}
		return nil
	})
}

const showColumns = `s.id, s.event_id, s.hall_id, s.starts_at, s.sale_starts_at, s.currency, s.prices,
	e.title, v.name, v.city, h.name, h.total_seats, s.sale_closed_at`

const showFrom = ` FROM shows s JOIN events e ON e.id = s.event_id JOIN halls h ON h.id = s.hall_id
	JOIN venues v ON v.id = h.venue_id`

func scanShow(row pgx.Row) (booking.Show, error) {
	var sh booking.Show
	var prices []byte
	var closed *time.Time
	err := row.Scan(&sh.ID, &sh.EventID, &sh.HallID, &sh.StartsAt, &sh.SaleStartsAt, &sh.Currency, &prices,
		&sh.Title, &sh.Venue, &sh.City, &sh.Hall, &sh.TotalSeats, &closed)
	if err != nil {
		return booking.Show{}, err
	}
	if closed != nil {
		sh.SaleClosedAt = closed.UTC()
	}
	if err := json.Unmarshal(prices, &sh.Prices); err != nil {
		return booking.Show{}, fmt.Errorf("postgres: show %s prices: %w", sh.ID, err)
	}
	sh.StartsAt, sh.SaleStartsAt = sh.StartsAt.UTC(), sh.SaleStartsAt.UTC()
	return sh, nil
}

// Show reads a show with its event's title and its venue and hall names.
func (s *Store) Show(ctx context.Context, id string) (booking.Show, error) {
	sh, err := scanShow(s.pool.QueryRow(ctx, `SELECT `+showColumns+showFrom+` WHERE s.id = $1`, id))
	if err != nil {
		return booking.Show{}, notFound("show", id, err)
	}
	return sh, nil
}

// Layout reads the show's seats in map order, priced by category.
func (s *Store) Layout(ctx context.Context, showID string) ([]booking.Seat, error) {
	rows, err := s.pool.Query(ctx, `SELECT st.seat_id, st.row_label, st.number, st.category,
			COALESCE((s.prices ->> st.category)::bigint, 0)
		FROM shows s JOIN seats st ON st.hall_id = s.hall_id WHERE s.id = $1 ORDER BY st.ord`, showID)
	if err != nil {
		return nil, fmt.Errorf("postgres: layout: %w", err)
	}
	seats, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (booking.Seat, error) {
		var st booking.Seat
		err := r.Scan(&st.ID, &st.Row, &st.Number, &st.Category, &st.Price)
		return st, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: layout: %w", err)
	}
	if len(seats) == 0 {
		return nil, fmt.Errorf("show %s: %w", showID, booking.ErrNotFound)
	}
	return seats, nil
}

// Search finds shows not yet started by city, UTC day, genre, language and text (title, genre, language, venue), grouped by
// event.
func (s *Store) Search(ctx context.Context, q booking.Search) ([]booking.EventShows, error) {
	where := []string{"s.starts_at > now()"}
	var args []any
	arg := func(v any) string { args = append(args, v); return fmt.Sprintf("$%d", len(args)) }
	if q.City != "" {
		where = append(where, "lower(v.city) = lower("+arg(q.City)+")")
	}
	if !q.Date.IsZero() {
		day := time.Date(q.Date.Year(), q.Date.Month(), q.Date.Day(), 0, 0, 0, 0, time.UTC)
		where = append(where, "s.starts_at >= "+arg(day)+" AND s.starts_at < "+arg(day.AddDate(0, 0, 1)))
	}
	if q.Genre != "" {
		where = append(where, "lower(e.genre) = lower("+arg(q.Genre)+")")
	}
	if q.Language != "" {
		where = append(where, "lower(e.language) = lower("+arg(q.Language)+")")
	}
	if q.Query != "" {
		p := arg("%" + escapeLike(q.Query) + "%")
		where = append(where, "(e.title ILIKE "+p+" OR e.genre ILIKE "+p+" OR e.language ILIKE "+p+" OR v.name ILIKE "+p+")")
	}
	sql := `SELECT e.id, e.title, e.kind, e.genre, e.language, e.duration_minutes,
			s.id, s.starts_at, v.name, v.city, h.name, h.total_seats` + showFrom +
		` WHERE ` + strings.Join(where, " AND ") + ` ORDER BY s.starts_at, s.id LIMIT ` + arg(q.Limit*10)
	var out []booking.EventShows
	err := s.lagging(ctx, func(db querier) error {
		rows, err := db.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		out, err = searchRows(rows, q.Limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: search: %w", err)
	}
	return out, nil
}

// searchRows gathers Search's rows into at most limit events with their shows.
func searchRows(rows pgx.Rows, limit int) ([]booking.EventShows, error) {
	defer rows.Close()
	var out []booking.EventShows
	index := map[string]int{}
	for rows.Next() {
		var e booking.Event
		var sh booking.ShowSummary
		if err := rows.Scan(&e.ID, &e.Title, &e.Kind, &e.Genre, &e.Language, &e.DurationMinutes,
			&sh.ID, &sh.StartsAt, &sh.Venue, &sh.City, &sh.Hall, &sh.TotalSeats); err != nil {
			return nil, err
		}
		sh.StartsAt = sh.StartsAt.UTC()
		i, ok := index[e.ID]
		if !ok {
			if len(out) == limit {
				continue
			}
			i = len(out)
			index[e.ID] = i
			out = append(out, booking.EventShows{Event: e})
		}
		out[i].Shows = append(out[i].Shows, sh)
	}
	return out, rows.Err()
}

func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// UpcomingShows lists the shows that have not ended long ago, for the reconciler.
func (s *Store) UpcomingShows(ctx context.Context, now time.Time) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM shows WHERE starts_at > $1 ORDER BY starts_at LIMIT 10000`,
		now.Add(-6*time.Hour))
	if err != nil {
		return nil, fmt.Errorf("postgres: upcoming shows: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("postgres: upcoming shows: %w", err)
	}
	return ids, nil
}

// SoldSeats lists the show's sold seats.
func (s *Store) SoldSeats(ctx context.Context, showID string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT seat_id FROM sold_seats WHERE show_id = $1`, showID)
	if err != nil {
		return nil, fmt.Errorf("postgres: sold seats: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("postgres: sold seats: %w", err)
	}
	return ids, nil
}

// Revenue sums the show's confirmed bookings.
func (s *Store) Revenue(ctx context.Context, showID string) (int64, error) {
	var n int64
	err := s.lagging(ctx, func(db querier) error {
		return db.QueryRow(ctx, `SELECT COALESCE(sum(total_amount), 0)::bigint FROM bookings
			WHERE show_id = $1 AND status = 'CONFIRMED'`, showID).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: revenue: %w", err)
	}
	return n, nil
}
