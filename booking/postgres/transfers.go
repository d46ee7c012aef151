package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flashseat/flashseat/booking"
)

const transferColumns = `id, show_id, ticket_id, booking_id, seat_id, from_user, coalesce(to_email, ''),
	coalesce(to_user, ''), coalesce(new_ticket_id, ''), status, expires_at, created_at, ended_at`

func scanTransfer(row pgx.Row) (booking.Transfer, error) {
	var t booking.Transfer
	var ended *time.Time
	err := row.Scan(&t.ID, &t.ShowID, &t.TicketID, &t.BookingID, &t.SeatID, &t.FromUser, &t.ToEmail, &t.ToUser,
		&t.NewTicketID, &t.Status, &t.ExpiresAt, &t.CreatedAt, &ended)
	t.ExpiresAt, t.CreatedAt = t.ExpiresAt.UTC(), t.CreatedAt.UTC()
	if ended != nil {
		t.EndedAt = ended.UTC()
	}
	return t, err
}

// transferable refuses a ticket that is no longer its holder's to give: used, refunded or given already.
func transferable(t booking.TicketInfo, userID string) error {
	if t.UserID != userID {
		return fmt.Errorf("ticket %s: %w", t.ID, booking.ErrNotFound)
	}
	return booking.TicketRefusal(t.ID, t.Status)
}

// CreateTransfer implements booking.TransferStore.
func (s *Store) CreateTransfer(ctx context.Context, t booking.Transfer, secretHash string) (booking.Transfer, error) {
	var out booking.Transfer
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tk, err := scanTicket(tx.QueryRow(ctx, `SELECT `+ticketColumns+` FROM tickets WHERE id = $1 FOR UPDATE`, t.TicketID))
		if err != nil {
			return notFound("ticket", t.TicketID, err)
		}
		if err := transferable(tk, t.FromUser); err != nil {
			return err
		}
		// Sending again replaces the open link: the old one is cancelled, and says so on the stream.
		rows, err := tx.Query(ctx, `UPDATE ticket_transfers SET status = 'CANCELLED', ended_at = now(), mail_link = NULL
			WHERE ticket_id = $1 AND status = 'PENDING' RETURNING `+transferColumns, t.TicketID)
		if err != nil {
			return fmt.Errorf("postgres: transfer %s: %w", t.TicketID, err)
		}
		replaced, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (booking.Transfer, error) { return scanTransfer(r) })
		if err != nil {
			return fmt.Errorf("postgres: transfer %s: %w", t.TicketID, err)
		}
		for _, r := range replaced {
			if err := transferCancelled(ctx, tx, r, "replaced"); err != nil {
				return err
			}
		}
		out, err = scanTransfer(tx.QueryRow(ctx, `INSERT INTO ticket_transfers (id, show_id, ticket_id, booking_id,
			seat_id, from_user, to_email, secret_hash, status, expires_at, mail_link) VALUES ($1, $2, $3, $4, $5, $6,
			NULLIF($7, ''), $8, 'PENDING', $9, NULLIF($10, '')) RETURNING `+transferColumns, t.ID, tk.ShowID, tk.ID,
			tk.BookingID, tk.SeatID, t.FromUser, t.ToEmail, secretHash, t.ExpiresAt, t.MailLink))
		if err != nil {
			return fmt.Errorf("postgres: transfer %s: %w", t.TicketID, err)
		}
		payload, _ := json.Marshal(map[string]any{"transferId": out.ID, "showId": out.ShowID, "ticketId": out.TicketID,
			"bookingId": out.BookingID, "seatId": out.SeatID, "userId": out.FromUser, "toEmail": out.ToEmail,
			"expiresAt": out.ExpiresAt})
		_, err = tx.Exec(ctx, `INSERT INTO outbox (aggregate_id, type, payload) VALUES ($1, $2, $3)`, out.ID,
			booking.EventTransferSent, payload)
		return err
	})
	return out, err
}

// ClaimTransfer implements booking.TransferStore. The booking row is locked before the old ticket, the order a
// refund takes, so the two serialise on the booking and never deadlock; a check-in's conditional UPDATE of the old
// ticket waits on its row lock and then finds it TRANSFERRED.
func (s *Store) ClaimTransfer(ctx context.Context, id, secretHash, toUser string, nt booking.Ticket, now time.Time) (booking.Transfer, error) {
	var out booking.Transfer
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tr, err := scanTransfer(tx.QueryRow(ctx, `SELECT `+transferColumns+` FROM ticket_transfers
			WHERE id = $1 AND secret_hash = $2 FOR UPDATE`, id, secretHash))
		if err != nil {
			return notFound("transfer", id, err)
		}
		if tr.Status == booking.TransferClaimed && tr.ToUser == toUser {
			out = tr // the same claimer again: the answer it had
			return nil
		}
		if tr.Status != booking.TransferPending {
			return fmt.Errorf("%w: transfer %s is %s", booking.ErrTransferClosed, id, tr.Status)
		}
		if !now.Before(tr.ExpiresAt) {
			return fmt.Errorf("%w: the claim link expired at %s", booking.ErrTransferClosed, tr.ExpiresAt.Format(time.RFC3339))
		}
		if _, err := tx.Exec(ctx, `SELECT 1 FROM bookings WHERE id = $1 FOR UPDATE`, tr.BookingID); err != nil {
			return fmt.Errorf("postgres: claim %s: %w", id, err)
		}
		old, err := scanTicket(tx.QueryRow(ctx, `SELECT `+ticketColumns+` FROM tickets WHERE id = $1 FOR UPDATE`, tr.TicketID))
		if err != nil {
			return fmt.Errorf("postgres: claim %s: %w", id, err)
		}
		if err := transferable(old, tr.FromUser); err != nil {
			return err
		}
		batch := &pgx.Batch{}
		batch.Queue(`UPDATE tickets SET status = 'TRANSFERRED' WHERE id = $1`, old.ID)
		batch.Queue(`INSERT INTO tickets (id, booking_id, user_id, show_id, seat_id, code, status, transferred_from)
			VALUES ($1, $2, $3, $4, $5, $6, 'VALID', $7)`, nt.ID, old.BookingID, toUser, old.ShowID, old.SeatID, nt.Code, old.ID)
		batch.Queue(`UPDATE ticket_transfers SET status = 'CLAIMED', to_user = $2, new_ticket_id = $3, ended_at = $4,
			mail_link = NULL WHERE id = $1`, id, toUser, nt.ID, now)
		payload, _ := json.Marshal(map[string]any{"transferId": id, "showId": old.ShowID, "ticketId": old.ID,
			"newTicketId": nt.ID, "bookingId": old.BookingID, "seatId": old.SeatID, "userId": tr.FromUser,
			"toUserId": toUser})
		batch.Queue(`INSERT INTO outbox (aggregate_id, type, payload) VALUES ($1, $2, $3)`, id,
			booking.EventTransferClaimed, payload)
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return fmt.Errorf("postgres: claim %s: %w", id, err)
		}
		tr.Status, tr.ToUser, tr.NewTicketID, tr.EndedAt = booking.TransferClaimed, toUser, nt.ID, now.UTC()
		out = tr
		return nil
	})
	return out, err
}

// transferCancelled writes a cancelled transfer's event to the outbox, in the transaction that cancelled it.
func transferCancelled(ctx context.Context, tx pgx.Tx, t booking.Transfer, reason string) error {
	payload, _ := json.Marshal(map[string]any{"transferId": t.ID, "showId": t.ShowID, "ticketId": t.TicketID,
		"bookingId": t.BookingID, "seatId": t.SeatID, "userId": t.FromUser, "toEmail": t.ToEmail, "reason": reason})
	if _, err := tx.Exec(ctx, `INSERT INTO outbox (aggregate_id, type, payload) VALUES ($1, $2, $3)`, t.ID,
		booking.EventTransferCancelled, payload); err != nil {
		return fmt.Errorf("postgres: cancel transfer %s: %w", t.ID, err)
	}
	return nil
}

// CancelTransfer implements booking.TransferStore.
func (s *Store) CancelTransfer(ctx context.Context, id, fromUser string) (booking.Transfer, error) {
	var tr booking.Transfer
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		tr, err = scanTransfer(tx.QueryRow(ctx, `UPDATE ticket_transfers SET status = 'CANCELLED', ended_at = now(),
			mail_link = NULL WHERE id = $1 AND from_user = $2 AND status = 'PENDING' RETURNING `+transferColumns, id, fromUser))
		if err != nil {
			return err
		}
		return transferCancelled(ctx, tx, tr, "sender")
	})
	if err == nil {
		return tr, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return booking.Transfer{}, fmt.Errorf("postgres: cancel transfer %s: %w", id, err)
	}
	tr, err = scanTransfer(s.pool.QueryRow(ctx, `SELECT `+transferColumns+` FROM ticket_transfers
		WHERE id = $1 AND from_user = $2`, id, fromUser))
	if err != nil {
		return booking.Transfer{}, notFound("transfer", id, err)
	}
	if tr.Status == booking.TransferCancelled {
		return tr, nil
	}
	return tr, fmt.Errorf("%w: transfer %s is %s", booking.ErrTransferClosed, id, tr.Status)
}

// TransferBySecret implements booking.TransferStore.
func (s *Store) TransferBySecret(ctx context.Context, id, secretHash string) (booking.Transfer, error) {
	tr, err := scanTransfer(s.pool.QueryRow(ctx, `SELECT `+transferColumns+` FROM ticket_transfers
		WHERE id = $1 AND secret_hash = $2`, id, secretHash))
	if err != nil {
		return booking.Transfer{}, notFound("transfer", id, err)
	}
	return tr, nil
}

// Transfers implements booking.TransferStore.
func (s *Store) Transfers(ctx context.Context, userID string) ([]booking.Transfer, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+transferColumns+` FROM ticket_transfers WHERE from_user = $1
		UNION ALL SELECT `+transferColumns+` FROM ticket_transfers WHERE to_user = $1 AND from_user <> $1
		ORDER BY created_at DESC LIMIT 200`, userID)
	if err != nil {
		return nil, fmt.Errorf("postgres: transfers: %w", err)
	}
	ts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (booking.Transfer, error) { return scanTransfer(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: transfers: %w", err)
	}
	return ts, nil
}

// TransferMailLink implements notify.Store: the claim link to mail for a transfer, "" once it is sent or the
// transfer has ended.
func (s *Store) TransferMailLink(ctx context.Context, id string) (string, error) {
	var link *string
	err := s.pool.QueryRow(ctx, `SELECT mail_link FROM ticket_transfers WHERE id = $1`, id).Scan(&link)
	if err != nil {
		return "", notFound("transfer", id, err)
	}
	if link == nil {
		return "", nil
	}
	return *link, nil
}

// ForgetTransferMail implements notify.Store: the link is mailed, so the table stops keeping it.
func (s *Store) ForgetTransferMail(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE ticket_transfers SET mail_link = NULL WHERE id = $1`, id); err != nil {
		return fmt.Errorf("postgres: transfer %s: %w", id, err)
	}
	return nil
}
