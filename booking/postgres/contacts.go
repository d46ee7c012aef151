package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flashseat/flashseat/booking"
)

var _ booking.ContactStore = (*Store)(nil)

// SetContact implements booking.ContactStore. A contact given without a language or a name keeps the one recorded.
func (s *Store) SetContact(ctx context.Context, c booking.Contact) error {
	// A changed address is unconfirmed until its own code comes back.
	_, err := s.pool.Exec(ctx, `INSERT INTO contacts (user_id, email, language, name) VALUES ($1, $2, $3, $4)
		ON CONFLICT (user_id) DO UPDATE SET email = EXCLUDED.email,
			language = CASE WHEN EXCLUDED.language = '' THEN contacts.language ELSE EXCLUDED.language END,
			name = CASE WHEN EXCLUDED.name = '' THEN contacts.name ELSE EXCLUDED.name END,
			confirmed_at = CASE WHEN contacts.email = EXCLUDED.email THEN contacts.confirmed_at END,
			updated_at = now()`, c.UserID, c.Email, c.Language, c.Name)
	if err != nil {
		return fmt.Errorf("postgres: set contact: %w", err)
	}
	return nil
}

// Contact implements booking.ContactStore.
func (s *Store) Contact(ctx context.Context, userID string) (booking.Contact, error) {
	c := booking.Contact{UserID: userID}
	if err := s.pool.QueryRow(ctx, `SELECT email, language, name, confirmed_at IS NOT NULL FROM contacts
		WHERE user_id = $1`, userID).Scan(&c.Email, &c.Language, &c.Name, &c.Confirmed); err != nil {
		return booking.Contact{}, notFound("contact of user", userID, err)
	}
	return c, nil
}

var _ booking.CodeStore = (*Store)(nil)

// SetContactCode implements booking.CodeStore.
func (s *Store) SetContactCode(ctx context.Context, userID string, hash []byte, expires time.Time) error {
	if _, err := s.pool.Exec(ctx, `UPDATE contacts SET code_hash = $2, code_expires_at = $3, code_tries = 0
		WHERE user_id = $1`, userID, hash, expires); err != nil {
		return fmt.Errorf("postgres: contact code: %w", err)
	}
	return nil
}

// ConfirmContact implements booking.CodeStore: one statement counts the try and confirms on a match, so guesses
// racing each other still count.
func (s *Store) ConfirmContact(ctx context.Context, userID string, hash []byte, now time.Time, tries int) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `UPDATE contacts SET code_tries = code_tries + 1,
		confirmed_at = CASE WHEN code_hash = $2 THEN $3 ELSE confirmed_at END,
		code_hash = CASE WHEN code_hash = $2 THEN NULL ELSE code_hash END
		WHERE user_id = $1 AND code_hash IS NOT NULL AND code_expires_at > $3 AND code_tries < $4
		RETURNING code_hash IS NULL`, userID, hash, now, tries).Scan(&ok)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("postgres: confirm contact: %w", err)
	}
	return ok, nil
}

// BookingLanguage is the page language of the request that created the booking ("" unknown).
func (s *Store) BookingLanguage(ctx context.Context, bookingID string) (string, error) {
	var lang string
	if err := s.pool.QueryRow(ctx, `SELECT language FROM bookings WHERE id = $1`, bookingID).Scan(&lang); err != nil {
		return "", notFound("booking", bookingID, err)
	}
	return lang, nil
}

// BeginNotification records that the notification of an event is being sent; false when it was sent already (a
// redelivered event). One that failed, or whose sender died, may be sent again.
func (s *Store) BeginNotification(ctx context.Context, eventID, userID, kind string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO notifications (event_id, user_id, kind, status) VALUES ($1, $2, $3, 'SENDING')
		ON CONFLICT (event_id) DO UPDATE SET status = 'SENDING', error = '' WHERE notifications.status <> 'SENT'`,
		eventID, userID, kind)
	if err != nil {
		return false, fmt.Errorf("postgres: begin notification: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// FinishNotification records the outcome of sending an event's notification.
func (s *Store) FinishNotification(ctx context.Context, eventID string, sendErr error) error {
	status, msg := "SENT", ""
	if sendErr != nil {
		status, msg = "FAILED", sendErr.Error()
		if len(msg) > 500 {
			msg = msg[:500]
		}
	}
	_, err := s.pool.Exec(ctx, `UPDATE notifications SET status = $2, error = $3,
		sent_at = CASE WHEN $2 = 'SENT' THEN now() END WHERE event_id = $1`, eventID, status, msg)
	if err != nil {
		return fmt.Errorf("postgres: finish notification: %w", err)
	}
	return nil
}
