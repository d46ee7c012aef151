package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/shard"
)

// The exchange's rows (booking/resale.go): listings, the holds made on them, and the sale's part of the
// confirmation (resellTx).

const listingColumns = `id, show_id, ticket_id, booking_id, seller_id, seat_id, category, face_value, price, fee,
	currency, status, coalesce(offer_booking_id, ''), coalesce(buyer_booking_id, ''), created_at`

func scanListing(row pgx.Row) (booking.Listing, error) {
	var l booking.Listing
	err := row.Scan(&l.ID, &l.ShowID, &l.TicketID, &l.BookingID, &l.SellerID, &l.SeatID, &l.Category, &l.FaceValue,
		&l.Price, &l.Fee, &l.Currency, &l.Status, &l.OfferBookingID, &l.BuyerBookingID, &l.CreatedAt)
	l.CreatedAt = l.CreatedAt.UTC()
	return l, err
}

// CreateListing implements booking.ResaleStore.
func (s *Store) CreateListing(ctx context.Context, l booking.Listing) (booking.Listing, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var status booking.Status
		if err := tx.QueryRow(ctx, `SELECT status FROM bookings WHERE id = $1 FOR UPDATE`, l.BookingID).
			Scan(&status); err != nil {
			return notFound("booking", l.BookingID, err)
		}
		tk, err := scanTicket(tx.QueryRow(ctx, `SELECT `+ticketColumns+` FROM tickets WHERE id = $1 FOR UPDATE`, l.TicketID))
		if err != nil {
			return notFound("ticket", l.TicketID, err)
		}
		if tk.UserID != l.SellerID {
			return fmt.Errorf("ticket %s: %w", tk.ID, booking.ErrNotFound)
		}
		if err := booking.TicketRefusal(tk.ID, tk.Status); err != nil {
			return err
		}
		if status != booking.StatusConfirmed {
			return fmt.Errorf("booking %s is %s: %w", l.BookingID, status, booking.ErrNotConfirmed)
		}
		batch := &pgx.Batch{}
		batch.Queue(`UPDATE tickets SET status = 'LISTED' WHERE id = $1`, tk.ID)
		batch.Queue(`INSERT INTO resale_listings (id, show_id, ticket_id, booking_id, seller_id, seat_id, category,
			face_value, price, fee, currency, status, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11,
			'LISTED', $12)`, l.ID, l.ShowID, l.TicketID, l.BookingID, l.SellerID, l.SeatID, l.Category, l.FaceValue,
			l.Price, l.Fee, l.Currency, l.CreatedAt)
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return fmt.Errorf("postgres: list ticket %s: %w", tk.ID, err)
		}
		return nil
	})
	return l, err
}

// WithdrawListing implements booking.ResaleStore. The listing's row is locked first, as the sale's confirmation
// locks it: of a withdrawal and a sale exactly one wins. A buyer attaching a hold takes it shared
// (AttachResaleHold), so a hold is either attached before the withdrawal looks for one, and refuses it, or
// attaches to a listing WITHDRAWN, which refuses the buyer.
func (s *Store) WithdrawListing(ctx context.Context, ticketID, sellerID string, now time.Time) (booking.Listing, error) {
	var l booking.Listing
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		l, err = scanListing(tx.QueryRow(ctx, `SELECT `+listingColumns+` FROM resale_listings
			WHERE ticket_id = $1 AND seller_id = $2 AND status = 'LISTED' FOR UPDATE`, ticketID, sellerID))
		if err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("ticket %s is not on the exchange: %w", ticketID, booking.ErrNotFound)
			}
			return fmt.Errorf("postgres: listing of %s: %w", ticketID, err)
		}
		var until time.Time
		err = tx.QueryRow(ctx, `SELECT max(b.expires_at) FROM resale_holds h JOIN bookings b ON b.id = h.booking_id
			WHERE h.listing_id = $1 AND (b.status = 'PAYMENT_PENDING' OR (b.status = 'HELD' AND b.expires_at > $2))
			HAVING count(*) > 0`, l.ID, now).Scan(&until)
		switch {
		case err == nil:
			return fmt.Errorf("a buyer is paying for ticket %s: withdraw it after their hold ends (%s), if it has not sold: %w",
				ticketID, until.UTC().Format(time.RFC3339), booking.ErrListingHeld)
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("postgres: holds of %s: %w", l.ID, err)
		}
		batch := &pgx.Batch{}
		batch.Queue(`UPDATE resale_listings SET status = 'WITHDRAWN', ended_at = now() WHERE id = $1`, l.ID)
		batch.Queue(`UPDATE tickets SET status = 'VALID' WHERE id = $1 AND status = 'LISTED'`, ticketID)
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return fmt.Errorf("postgres: withdraw %s: %w", l.ID, err)
		}
		l.Status = booking.ListingWithdrawn
		return nil
	})
	return l, err
}

// Listing implements booking.ResaleStore.
func (s *Store) Listing(ctx context.Context, id string) (booking.Listing, error) {
	l, err := scanListing(s.pool.QueryRow(ctx, `SELECT `+listingColumns+` FROM resale_listings WHERE id = $1`, id))
	if err != nil {
		return booking.Listing{}, notFound("listing", id, err)
	}
	return l, nil
}

// Listings implements booking.ResaleStore: a listing offered to the waitlist is the public's once that offer's
// hold has ended unpaid.
func (s *Store) Listings(ctx context.Context, showID string) ([]booking.Listing, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+listingColumns+` FROM resale_listings l
		WHERE l.show_id = $1 AND l.status = 'LISTED' AND NOT EXISTS (SELECT 1 FROM bookings b
			WHERE b.id = l.offer_booking_id AND b.status IN ('HELD', 'PAYMENT_PENDING'))
		ORDER BY l.price, l.created_at, l.id`, showID)
	if err != nil {
		return nil, fmt.Errorf("postgres: listings of %s: %w", showID, err)
	}
	ls, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (booking.Listing, error) { return scanListing(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: listings of %s: %w", showID, err)
	}
	return ls, nil
}

// BookingListings implements booking.ResaleStore.
func (s *Store) BookingListings(ctx context.Context, bookingID string) ([]booking.Listing, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+listingColumns+` FROM resale_listings WHERE booking_id = $1
		ORDER BY created_at DESC, id DESC`, bookingID)
	if err != nil {
		return nil, fmt.Errorf("postgres: listings of booking %s: %w", bookingID, err)
	}
	ls, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (booking.Listing, error) { return scanListing(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: listings of booking %s: %w", bookingID, err)
	}
	return ls, nil
}

// OfferedListing implements booking.ResaleStore: the hold's listing by resale_holds' key, still LISTED and still
// under that offer (offered again, its offer_booking_id names the new hold).
func (s *Store) OfferedListing(ctx context.Context, offerBookingID string) (booking.Listing, bool, error) {
	l, err := scanListing(s.pool.QueryRow(ctx, `SELECT `+listingColumns+` FROM resale_listings
		WHERE id = (SELECT listing_id FROM resale_holds WHERE booking_id = $1) AND offer_booking_id = $1
			AND status = 'LISTED'`, offerBookingID))
	if errors.Is(err, pgx.ErrNoRows) {
		return booking.Listing{}, false, nil
	}
	if err != nil {
		return booking.Listing{}, false, fmt.Errorf("postgres: listing offered as %s: %w", offerBookingID, err)
	}
	return l, true, nil
}

// AttachResaleHold implements booking.ResaleStore.
func (s *Store) AttachResaleHold(ctx context.Context, listingID, bookingID string, offer bool) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var status booking.ListingStatus
		var seat string
		err := tx.QueryRow(ctx, `SELECT status, seat_id FROM resale_listings WHERE id = $1 FOR SHARE`, listingID).
			Scan(&status, &seat)
		if err != nil {
			return notFound("listing", listingID, err)
		}
		if status != booking.ListingListed {
			return fmt.Errorf("listing %s is %s: %w", listingID, status,
				&booking.ConflictError{Unavailable: []string{seat}, Alternatives: []string{}})
		}
		if _, err := tx.Exec(ctx, `INSERT INTO resale_holds (booking_id, listing_id) VALUES ($1, $2)`, bookingID,
			listingID); err != nil {
			return fmt.Errorf("postgres: resale hold %s: %w", bookingID, err)
		}
		if offer {
			if _, err := tx.Exec(ctx, `UPDATE resale_listings SET offer_booking_id = $2 WHERE id = $1`, listingID,
				bookingID); err != nil {
				return fmt.Errorf("postgres: resale offer %s: %w", bookingID, err)
			}
		}
		return nil
	})
}

// PayoutOf implements booking.ResaleStore.
func (s *Store) PayoutOf(ctx context.Context, buyerBookingID string) (booking.Refund, bool, error) {
	r, err := scanRefund(s.pool.QueryRow(ctx, `SELECT `+refundColumns+refundFrom+`
		JOIN resale_listings l ON l.id = r.listing_id WHERE l.buyer_booking_id = $1`, buyerBookingID))
	if errors.Is(err, pgx.ErrNoRows) {
		return booking.Refund{}, false, nil
	}
	if err != nil {
		return booking.Refund{}, false, fmt.Errorf("postgres: payout of %s: %w", buyerBookingID, err)
	}
	return r, true, nil
}

// resellTx is the exchange's part of the confirmation of b (inside ConfirmTx, its row locked): nothing when b is
// no hold of a listing. Otherwise the listing is locked and must still be LISTED (a withdrawal or a sale won
// otherwise: booking.ErrSeatsUnavailable), the seat leaves the seller's booking (ConfirmTx then writes it under
// b), the seller's ticket becomes RESOLD, and the payout is recorded PENDING as a refund of the seller's payment
// naming the listing; the seller's booking is REFUNDED when no seat of it is left, as after a refund.
func resellTx(ctx context.Context, tx pgx.Tx, b booking.Booking) error {
	l, err := scanListing(tx.QueryRow(ctx, `SELECT `+listingColumns+` FROM resale_listings
		WHERE id = (SELECT listing_id FROM resale_holds WHERE booking_id = $1) FOR UPDATE`, b.ID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("postgres: listing of %s: %w", b.ID, err)
	}
	if l.Status != booking.ListingListed {
		return fmt.Errorf("listing %s is %s: %w", l.ID, l.Status, booking.ErrSeatsUnavailable)
	}
	var sellerStatus booking.Status
	if err := tx.QueryRow(ctx, `SELECT status FROM bookings WHERE id = $1 FOR UPDATE`, l.BookingID).
		Scan(&sellerStatus); err != nil {
		return fmt.Errorf("postgres: seller's booking %s: %w", l.BookingID, err)
	}
	tag, err := tx.Exec(ctx, `UPDATE tickets SET status = 'RESOLD' WHERE id = $1 AND status = 'LISTED'`, l.TicketID)
	if err != nil {
		return fmt.Errorf("postgres: resell %s: %w", l.TicketID, err)
	}
	if tag.RowsAffected() != 1 || sellerStatus != booking.StatusConfirmed {
		return fmt.Errorf("listing %s: the seller's ticket is no longer listed: %w", l.ID, booking.ErrSeatsUnavailable)
	}
	tag, err = tx.Exec(ctx, `DELETE FROM sold_seats WHERE show_id = $1 AND seat_id = $2 AND booking_id = $3`,
		l.ShowID, l.SeatID, l.BookingID)
	if err != nil {
		return fmt.Errorf("postgres: resell %s: %w", l.SeatID, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("listing %s: the seat is no longer the seller's: %w", l.ID, booking.ErrSeatsUnavailable)
	}
	return recordPayout(ctx, tx, l, b.ID)
}

// recordPayout writes the seller's payout of a sold listing: the listing SOLD to buyer, a PENDING refund of the
// seller's payment for the price less the fee, and the seller's booking and payment moved on as a refund of
// their last seat would move them.
func recordPayout(ctx context.Context, tx pgx.Tx, l booking.Listing, buyer string) error {
	var left int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM sold_seats WHERE booking_id = $1`, l.BookingID).Scan(&left); err != nil {
		return fmt.Errorf("postgres: resell %s: %w", l.ID, err)
	}
	var paymentID string
	if err := tx.QueryRow(ctx, `SELECT id FROM payments WHERE booking_id = $1 FOR UPDATE`, l.BookingID).
		Scan(&paymentID); err != nil {
		return fmt.Errorf("postgres: payment of %s: %w", l.BookingID, err)
	}
	refundID := shard.ID("rf_", l.ShowID)
	payout := l.Payout()
	payload, _ := json.Marshal(map[string]any{"bookingId": l.BookingID, "showId": l.ShowID, "userId": l.SellerID,
		"seatIds": []string{l.SeatID}, "paymentId": paymentID, "refundId": refundID, "listingId": l.ID,
		"buyerBookingId": buyer, "amount": payout, "currency": l.Currency})
	batch := &pgx.Batch{}
	batch.Queue(`UPDATE resale_listings SET status = 'SOLD', buyer_booking_id = $2, ended_at = now() WHERE id = $1`,
		l.ID, buyer)
	if left == 0 {
		batch.Queue(`UPDATE bookings SET status = 'REFUNDED', updated_at = now() WHERE id = $1`, l.BookingID)
		batch.Queue(`UPDATE payments SET status = 'REFUNDING', updated_at = now() WHERE id = $1`, paymentID)
	} else {
		batch.Queue(`UPDATE bookings SET updated_at = now() WHERE id = $1`, l.BookingID)
	}
	batch.Queue(`INSERT INTO refunds (id, booking_id, show_id, payment_id, status, seat_ids, seats_amount, percent,
		fee, amount_due, listing_id) VALUES ($1, $2, $3, $4, 'PENDING', $5, $6, $7, $8, $9, $10)`,
		refundID, l.BookingID, l.ShowID, paymentID, []string{l.SeatID}, l.FaceValue, payout*100/l.FaceValue, l.Fee,
		payout, l.ID)
	batch.Queue(`INSERT INTO outbox (aggregate_id, type, payload) VALUES ($1, $2, $3)`, l.BookingID,
		booking.EventResold, payload)
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return fmt.Errorf("postgres: resell %s: %w", l.ID, err)
	}
	return nil
}
