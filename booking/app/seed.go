package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/booking"
)

// seedLock serialises demo seeding across replicas starting at once.
const seedLock int64 = 0x666c617368646d6f // "flashdmo"

// DemoRows is the demo hall: rows A-J of 20 seats; A-C SILVER, D-H GOLD, I-J PLATINUM.
func DemoRows() []booking.Row {
	var rows []booking.Row
	for i, r := range "ABCDEFGHIJ" {
		cat := "GOLD"
		switch {
		case i < 3:
			cat = "SILVER"
		case i >= 8:
			cat = "PLATINUM"
		}
		rows = append(rows, booking.Row{Label: string(r), Seats: 20, Category: cat})
	}
	return rows
}

// SeedDemo makes sure the demo exists, idempotently: venue "PVR Forum" in Bangalore with hall "Screen 1", an
// event, and a show on sale that has not started. It returns the show's id.
func SeedDemo(ctx context.Context, pool *pgxpool.Pool, svc *booking.Service) (string, error) {
	// The lock is a transaction's, which ends with it: behind PgBouncer in transaction pooling mode a session
	// lock's unlock could reach another server connection. The transaction only reads (READ COMMITTED: it sees
	// what svc commits meanwhile on other connections).
	conn, err := pool.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = conn.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", seedLock); err != nil {
		return "", err
	}

	var hallID, showID, eventID string
	err = conn.QueryRow(ctx, `SELECT h.id FROM venues v JOIN halls h ON h.venue_id = v.id
		WHERE v.name = 'PVR Forum' AND v.city = 'Bangalore' AND h.name = 'Screen 1' LIMIT 1`).Scan(&hallID)
	if errors.Is(err, pgx.ErrNoRows) {
		v, err := svc.CreateVenue(ctx, booking.Venue{Name: "PVR Forum", City: "Bangalore",
			Halls: []booking.Hall{{Name: "Screen 1", Rows: DemoRows()}}})
		if err != nil {
			return "", err
		}
		hallID = v.Halls[0].ID
	} else if err != nil {
		return "", fmt.Errorf("find demo hall: %w", err)
	}
	err = conn.QueryRow(ctx, `SELECT id, event_id FROM shows WHERE hall_id = $1 AND starts_at > now() + interval '1 hour'
		AND sale_starts_at <= now() ORDER BY starts_at LIMIT 1`, hallID).Scan(&showID, &eventID)
	if err == nil {
		return showID, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("find demo show: %w", err)
	}
	err = conn.QueryRow(ctx, `SELECT id FROM events WHERE title = 'Flash Premiere' LIMIT 1`).Scan(&eventID)
	if errors.Is(err, pgx.ErrNoRows) {
		e, err := svc.CreateEvent(ctx, booking.Event{Title: "Flash Premiere", Kind: "movie", Genre: "Action",
			Language: "English", DurationMinutes: 150})
		if err != nil {
			return "", err
		}
		eventID = e.ID
	} else if err != nil {
		return "", fmt.Errorf("find demo event: %w", err)
	}
	now := time.Now().UTC()
	starts := time.Date(now.Year(), now.Month(), now.Day(), 19, 30, 0, 0, time.UTC).AddDate(0, 0, 7)
	sh, err := svc.CreateShow(ctx, booking.Show{EventID: eventID, HallID: hallID, StartsAt: starts,
		SaleStartsAt: now.Add(-time.Minute), Currency: "INR",
		Prices: map[string]int64{"SILVER": 25000, "GOLD": 45000, "PLATINUM": 80000}})
	if err != nil {
		return "", err
	}
	return sh.ID, nil
}
