package postgres

import (
	"context"
	"time"

	"github.com/flashseat/flashseat/booking"
)

// Payments, tickets, refunds and the waitlist's sweeps on Shards: each row is on its booking's shard, found from
// the id, which carries the show's key (shard.ID); the workers' sweeps ask every shard.

// onShard runs fn on the shard that keeps id's rows.
func onShard[T any](s *Shards, what, id string, fn func(*Store) (T, error)) (T, error) {
	st, err := s.byID(what, id)
	if err != nil {
		var zero T
		return zero, err
	}
	return fn(st)
}

func (s *Shards) StartAttempt(ctx context.Context, a booking.Attempt) (booking.Attempt, bool, error) {
	st, err := s.byID("booking", a.BookingID)
	if err != nil {
		return booking.Attempt{}, false, err
	}
	return st.StartAttempt(ctx, a)
}
func (s *Shards) Attempt(ctx context.Context, id string) (booking.Attempt, error) {
	return onShard(s, "attempt", id, func(st *Store) (booking.Attempt, error) { return st.Attempt(ctx, id) })
}

// AttemptByKey asks every shard: a user's Idempotency-Key names one attempt whatever the show.
func (s *Shards) AttemptByKey(ctx context.Context, userID, key string) (booking.Attempt, error) {
	return first(ctx, s, func(ctx context.Context, st *Store) (booking.Attempt, error) {
		return st.AttemptByKey(ctx, userID, key)
	})
}
func (s *Shards) AttemptsOf(ctx context.Context, bookingID string) ([]booking.Attempt, error) {
	return onShard(s, "booking", bookingID, func(st *Store) ([]booking.Attempt, error) { return st.AttemptsOf(ctx, bookingID) })
}

// AttemptByIntent asks every shard: the gateway's intent id carries no show.
func (s *Shards) AttemptByIntent(ctx context.Context, intentID string) (booking.Attempt, error) {
	return first(ctx, s, func(ctx context.Context, st *Store) (booking.Attempt, error) {
		return st.AttemptByIntent(ctx, intentID)
	})
}
func (s *Shards) UpdateAttempt(ctx context.Context, id string, u booking.AttemptUpdate) (bool, error) {
	return onShard(s, "attempt", id, func(st *Store) (bool, error) { return st.UpdateAttempt(ctx, id, u) })
}
func (s *Shards) DeleteAttempt(ctx context.Context, id string) error {
	_, err := onShard(s, "attempt", id, func(st *Store) (struct{}, error) { return struct{}{}, st.DeleteAttempt(ctx, id) })
	return err
}
func (s *Shards) ClaimAttempts(ctx context.Context, lease time.Duration, limit int) ([]booking.Attempt, error) {
	return sweep(ctx, s, "attempts", func(ctx context.Context, st *Store) ([]booking.Attempt, error) {
		return st.ClaimAttempts(ctx, lease, limit)
	})
}
func (s *Shards) ConfirmSale(ctx context.Context, sale booking.Sale) (booking.Booking, error) {
	return onShard(s, "booking", sale.BookingID, func(st *Store) (booking.Booking, error) { return st.ConfirmSale(ctx, sale) })
}
func (s *Shards) PaymentOf(ctx context.Context, bookingID string) (booking.Payment, error) {
	return onShard(s, "booking", bookingID, func(st *Store) (booking.Payment, error) { return st.PaymentOf(ctx, bookingID) })
}
func (s *Shards) MarkCaptured(ctx context.Context, paymentID string, amount int64) error {
	_, err := onShard(s, "payment", paymentID, func(st *Store) (struct{}, error) {
		return struct{}{}, st.MarkCaptured(ctx, paymentID, amount)
	})
	return err
}
func (s *Shards) UncapturedPayments(ctx context.Context, olderThan time.Time, limit int) ([]booking.Payment, error) {
	return sweep(ctx, s, "capture", func(ctx context.Context, st *Store) ([]booking.Payment, error) {
		return st.UncapturedPayments(ctx, olderThan, limit)
	})
}

// SeenEvent remembers the gateway's webhook ids in the catalog: an event id carries no show.
func (s *Shards) SeenEvent(ctx context.Context, id, typ, intentID string) (bool, error) {
	return s.catalog.SeenEvent(ctx, id, typ, intentID)
}
func (s *Shards) RefundSucceeded(ctx context.Context, refundID string, amount int64, gatewayRefundID string) error {
	_, err := onShard(s, "refund", refundID, func(st *Store) (struct{}, error) {
		return struct{}{}, st.RefundSucceeded(ctx, refundID, amount, gatewayRefundID)
	})
	return err
}
func (s *Shards) PendingRefunds(ctx context.Context, olderThan time.Time, limit int) ([]booking.Refund, error) {
	return sweep(ctx, s, "refunds", func(ctx context.Context, st *Store) ([]booking.Refund, error) {
		return st.PendingRefunds(ctx, olderThan, limit)
	})
}
func (s *Shards) Tickets(ctx context.Context, bookingID string) ([]booking.Ticket, error) {
	return onShard(s, "booking", bookingID, func(st *Store) ([]booking.Ticket, error) { return st.Tickets(ctx, bookingID) })
}
func (s *Shards) TicketByID(ctx context.Context, id string) (booking.TicketInfo, error) {
	return onShard(s, "ticket", id, func(st *Store) (booking.TicketInfo, error) { return st.TicketByID(ctx, id) })
}
func (s *Shards) CheckIn(ctx context.Context, ticketID, showID, seatID, by string, at time.Time) (booking.TicketInfo, error) {
	return onShard(s, "ticket", ticketID, func(st *Store) (booking.TicketInfo, error) {
		return st.CheckIn(ctx, ticketID, showID, seatID, by, at)
	})
}
func (s *Shards) StaleOffers(ctx context.Context, limit int) ([]booking.WaitlistEntry, error) {
	return sweep(ctx, s, "stale offers", func(ctx context.Context, st *Store) ([]booking.WaitlistEntry, error) {
		return st.StaleOffers(ctx, limit)
	})
}
func (s *Shards) ShowsInLine(ctx context.Context) ([]string, error) {
	return sweep(ctx, s, "waitlist", func(ctx context.Context, st *Store) ([]string, error) {
		return st.ShowsInLine(ctx)
	})
}
