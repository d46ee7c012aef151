package postgres

import (
	"context"
	"slices"
	"time"

	"github.com/flashseat/flashseat/booking"
)

// Refunds, ticket policies and transfers on Shards: a refund is on its booking's shard, a policy on its show's,
// a transfer (whose id carries the show's key, shard.ID) on its ticket's.

func (s *Shards) RecordRefund(ctx context.Context, r booking.Refund) (booking.Booking, error) {
	return onShard(s, "booking", r.BookingID, func(st *Store) (booking.Booking, error) { return st.RecordRefund(ctx, r) })
}
func (s *Shards) Refunds(ctx context.Context, bookingID string) ([]booking.Refund, error) {
	return onShard(s, "booking", bookingID, func(st *Store) ([]booking.Refund, error) { return st.Refunds(ctx, bookingID) })
}
func (s *Shards) TicketPolicy(ctx context.Context, showID string) (booking.TicketPolicy, bool, error) {
	return s.At(showID).TicketPolicy(ctx, showID)
}
func (s *Shards) SetTicketPolicy(ctx context.Context, showID string, tp booking.TicketPolicy) error {
	return s.At(showID).SetTicketPolicy(ctx, showID, tp)
}
func (s *Shards) CreateTransfer(ctx context.Context, t booking.Transfer, secretHash string) (booking.Transfer, error) {
	return onShard(s, "ticket", t.TicketID, func(st *Store) (booking.Transfer, error) {
		return st.CreateTransfer(ctx, t, secretHash)
	})
}
func (s *Shards) ClaimTransfer(ctx context.Context, id, secretHash, toUser string, nt booking.Ticket, now time.Time) (booking.Transfer, error) {
	return onShard(s, "transfer", id, func(st *Store) (booking.Transfer, error) {
		return st.ClaimTransfer(ctx, id, secretHash, toUser, nt, now)
	})
}
func (s *Shards) CancelTransfer(ctx context.Context, id, fromUser string) (booking.Transfer, error) {
	return onShard(s, "transfer", id, func(st *Store) (booking.Transfer, error) { return st.CancelTransfer(ctx, id, fromUser) })
}
func (s *Shards) TransferBySecret(ctx context.Context, id, secretHash string) (booking.Transfer, error) {
	return onShard(s, "transfer", id, func(st *Store) (booking.Transfer, error) {
		return st.TransferBySecret(ctx, id, secretHash)
	})
}

// Transfers asks every shard: a fan's transfers are of any show. Newest first across them.
func (s *Shards) Transfers(ctx context.Context, userID string) ([]booking.Transfer, error) {
	ts, err := sweep(ctx, s, "transfers", func(ctx context.Context, st *Store) ([]booking.Transfer, error) {
		return st.Transfers(ctx, userID)
	})
	slices.SortFunc(ts, func(a, b booking.Transfer) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return ts, err
}

func (s *Shards) TransferMailLink(ctx context.Context, id string) (string, error) {
	return onShard(s, "transfer", id, func(st *Store) (string, error) { return st.TransferMailLink(ctx, id) })
}
func (s *Shards) ForgetTransferMail(ctx context.Context, id string) error {
	_, err := onShard(s, "transfer", id, func(st *Store) (struct{}, error) { return struct{}{}, st.ForgetTransferMail(ctx, id) })
	return err
}

// The exchange on Shards: a listing's id, like a ticket's and a booking's, carries its show's key.
func (s *Shards) CreateListing(ctx context.Context, l booking.Listing) (booking.Listing, error) {
	return s.At(l.ShowID).CreateListing(ctx, l)
}
func (s *Shards) WithdrawListing(ctx context.Context, ticketID, sellerID string) (booking.Listing, error) {
	return onShard(s, "ticket", ticketID, func(st *Store) (booking.Listing, error) {
		return st.WithdrawListing(ctx, ticketID, sellerID)
	})
}
func (s *Shards) Listing(ctx context.Context, id string) (booking.Listing, error) {
	return onShard(s, "listing", id, func(st *Store) (booking.Listing, error) { return st.Listing(ctx, id) })
}
func (s *Shards) Listings(ctx context.Context, showID string) ([]booking.Listing, error) {
	return s.At(showID).Listings(ctx, showID)
}
func (s *Shards) AttachResaleHold(ctx context.Context, listingID, bookingID string, offer bool) error {
	_, err := onShard(s, "listing", listingID, func(st *Store) (struct{}, error) {
		return struct{}{}, st.AttachResaleHold(ctx, listingID, bookingID, offer)
	})
	return err
}
func (s *Shards) PayoutOf(ctx context.Context, buyerBookingID string) (booking.Refund, bool, error) {
	var ok bool
	r, err := onShard(s, "booking", buyerBookingID, func(st *Store) (booking.Refund, error) {
		r, found, err := st.PayoutOf(ctx, buyerBookingID)
		ok = found
		return r, err
	})
	return r, ok, err
}

// The door's scans on Shards: a ticket's scans are on its shard, a show's kit and conflicts on the show's.
func (s *Shards) GateTickets(ctx context.Context, showID string) ([]booking.TicketInfo, error) {
	return s.At(showID).GateTickets(ctx, showID)
}
func (s *Shards) RecordScan(ctx context.Context, sc booking.Scan) (booking.ScanResult, error) {
	return onShard(s, "ticket", sc.TicketID, func(st *Store) (booking.ScanResult, error) { return st.RecordScan(ctx, sc) })
}
func (s *Shards) GateConflicts(ctx context.Context, showID string) ([]booking.GateConflict, error) {
	return s.At(showID).GateConflicts(ctx, showID)
}
