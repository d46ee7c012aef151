package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flashseat/flashseat/booking"
)

// GateTickets implements booking.GateStore.
func (s *Store) GateTickets(ctx context.Context, showID string) ([]booking.TicketInfo, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+ticketColumns+` FROM tickets
		WHERE show_id = $1 AND status IN ('VALID', 'CHECKED_IN') ORDER BY seat_id`, showID)
	if err != nil {
		return nil, fmt.Errorf("postgres: gate tickets of %s: %w", showID, err)
	}
	ts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (booking.TicketInfo, error) { return scanTicket(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: gate tickets of %s: %w", showID, err)
	}
	return ts, nil
}

// RecordScan implements booking.GateStore. The ticket's row lock orders every scan of one ticket, whichever
// device and process sends it: the first to find it VALID checks it in; one that finds it CHECKED_IN later than
// its own scan takes the check-in over (the earliest scan wins, whatever order they arrive in) and the earlier
// holder becomes the conflict. Before that, the current first scan is written to gate_scans too (an online
// check-in has no row of its own until then), so the rows always hold both sides of a conflict.
func (s *Store) RecordScan(ctx context.Context, sc booking.Scan) (booking.ScanResult, error) {
	var out booking.ScanResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		t, err := scanTicket(tx.QueryRow(ctx, `SELECT `+ticketColumns+` FROM tickets WHERE id = $1 FOR UPDATE`, sc.TicketID))
		if errors.Is(err, pgx.ErrNoRows) || err == nil && (t.ShowID != sc.ShowID || t.SeatID != sc.SeatID) {
			out = booking.ScanResult{Status: booking.ScanRefused, Err: fmt.Errorf("ticket %s: %w", sc.TicketID, booking.ErrNotFound)}
			return nil
		}
		if err != nil {
			return err
		}
		if t.Status != booking.TicketCheckedIn {
			if rerr := booking.TicketRefusal(t.ID, t.Status); rerr != nil {
				out = booking.ScanResult{Status: booking.ScanRefused, Err: rerr}
				return nil
			}
		}
		var firstBy string
		if t.Status == booking.TicketCheckedIn {
			if err := tx.QueryRow(ctx, `SELECT COALESCE(checked_in_by, '') FROM tickets WHERE id = $1`, t.ID).Scan(&firstBy); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO gate_scans (ticket_id, device_id, show_id, scanned_at)
				VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, t.ID, firstBy, t.ShowID, t.CheckedInAt); err != nil {
				return err
			}
		}
		tag, err := tx.Exec(ctx, `INSERT INTO gate_scans (ticket_id, device_id, show_id, scanned_at)
			VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, t.ID, sc.DeviceID, t.ShowID, sc.At)
		if err != nil {
			return err
		}
		switch {
		case tag.RowsAffected() == 0:
			out = booking.ScanResult{Status: booking.ScanDuplicate, FirstDevice: firstBy, FirstAt: t.CheckedInAt}
		case t.Status == booking.TicketValid:
			if _, err := tx.Exec(ctx, `WITH t AS (UPDATE tickets SET status = 'CHECKED_IN', checked_in_at = $2,
					checked_in_by = $3 WHERE id = $1 RETURNING *)
				`+checkInEvent, t.ID, sc.At, sc.DeviceID); err != nil {
				return err
			}
			out = booking.ScanResult{Status: booking.ScanAdmitted, FirstDevice: sc.DeviceID, FirstAt: sc.At}
		case sc.At.Before(t.CheckedInAt):
			if _, err := tx.Exec(ctx, `UPDATE tickets SET checked_in_at = $2, checked_in_by = $3 WHERE id = $1`,
				t.ID, sc.At, sc.DeviceID); err != nil {
				return err
			}
			out = booking.ScanResult{Status: booking.ScanAdmitted, FirstDevice: sc.DeviceID, FirstAt: sc.At}
		default:
			out = booking.ScanResult{Status: booking.ScanConflict, FirstDevice: firstBy, FirstAt: t.CheckedInAt}
		}
		return nil
	})
	if err != nil {
		return booking.ScanResult{}, fmt.Errorf("postgres: scan of %s: %w", sc.TicketID, err)
	}
	out.FirstAt = out.FirstAt.UTC()
	return out, nil
}

// GateConflicts implements booking.GateStore: every scan of a ticket by a device other than the one its
// check-in names (the earliest).
func (s *Store) GateConflicts(ctx context.Context, showID string) ([]booking.GateConflict, error) {
	rows, err := s.pool.Query(ctx, `SELECT g.ticket_id, t.seat_id, t.checked_in_by, t.checked_in_at, g.device_id,
			g.scanned_at
		FROM gate_scans g JOIN tickets t ON t.id = g.ticket_id
		WHERE g.show_id = $1 AND g.device_id <> t.checked_in_by ORDER BY g.scanned_at, g.ticket_id, g.device_id`, showID)
	if err != nil {
		return nil, fmt.Errorf("postgres: gate conflicts of %s: %w", showID, err)
	}
	cs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (booking.GateConflict, error) {
		var c booking.GateConflict
		var firstAt, secondAt time.Time
		err := r.Scan(&c.TicketID, &c.SeatID, &c.First.DeviceID, &firstAt, &c.Second.DeviceID, &secondAt)
		c.First.At, c.Second.At = firstAt.UTC(), secondAt.UTC()
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: gate conflicts of %s: %w", showID, err)
	}
	return cs, nil
}
