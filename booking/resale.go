package booking

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/flashseat/flashseat/shared/shard"
)

// The face-value exchange. A fan who cannot go lists a paid ticket at no more than the show's cap (a share of
// its face value). The listing is offered first to the show's waitlist, by the same hold an offer of a seat
// coming back is (waitlist_offer.go), then to anyone: a buyer takes a hold on the listed seat (hold.lua's resale
// claim: the seat stays sold to the seller while the buyer pays, so nobody else can take it) and pays it with
// Pay as any booking. The sale's one transaction (postgres ConfirmTx) moves the seat from the seller's booking
// to the buyer's, marks the seller's ticket RESOLD, issues the buyer's ticket with a new code and records the
// seller's payout, price less the fee, as a refund of the seller's payment, which settleRefund returns at the
// gateway under an idempotency key of its own: retried by the worker until it succeeds, paid exactly once.

// ListingStatus is where a resale listing stands.
type ListingStatus string

// A listing is LISTED until it is SOLD or its seller WITHDRAWN it.
const (
	ListingListed    ListingStatus = "LISTED"
	ListingSold      ListingStatus = "SOLD"
	ListingWithdrawn ListingStatus = "WITHDRAWN"
)

// ResalePolicy is the operator's word on a show's exchange: open at all, the highest price as a share of the
// ticket's face value (at most 1: the exchange is at face value or below), and the share of the price kept as a
// fee (the seller gets the rest).
type ResalePolicy struct {
	Enabled       bool
	MaxPriceRatio float64
	FeePercent    float64
}

// DefaultResalePolicy is a show's without one of its own: closed, at face value, no fee.
var DefaultResalePolicy = ResalePolicy{MaxPriceRatio: 1}

// Validate refuses a policy outside its bounds: maxPriceRatio in (0,1], feePercent in [0,100).
func (p ResalePolicy) Validate() error {
	if math.IsNaN(p.MaxPriceRatio) || p.MaxPriceRatio <= 0 || p.MaxPriceRatio > 1 {
		return Unprocessable("resalePolicy.maxPriceRatio must be above 0 and at most 1")
	}
	if math.IsNaN(p.FeePercent) || p.FeePercent < 0 || p.FeePercent >= 100 {
		return Unprocessable("resalePolicy.feePercent must be at least 0 and below 100")
	}
	return nil
}

// Cap is the highest price a ticket of face value may be listed at.
func (p ResalePolicy) Cap(face int64) int64 {
	return int64(math.Floor(float64(face)*p.MaxPriceRatio + 1e-9))
}

// Fee is what the exchange keeps of a sale at price: rounded down, so it is always below the price.
func (p ResalePolicy) Fee(price int64) int64 {
	return int64(math.Floor(float64(price) * p.FeePercent / 100))
}

// Listing is one ticket on the exchange.
type Listing struct {
	ID        string
	ShowID    string
	TicketID  string
	BookingID string // the seller's booking, whose payment the payout comes from
	SellerID  string
	SeatID    string
	Category  string
	FaceValue int64
	Price     int64
	Fee       int64
	Currency  string
	Status    ListingStatus
	// OfferBookingID is the hold made for the waitlist's fan it was offered to first (empty: none was).
	OfferBookingID string
	// BuyerBookingID is the booking that bought it, once SOLD.
	BuyerBookingID string
	CreatedAt      time.Time
}

// Payout is what the seller gets: the price less the fee.
func (l Listing) Payout() int64 { return l.Price - l.Fee }

// ResaleStore is the ledger's side of the exchange; the sale itself is part of the confirmation (SaleStore).
type ResaleStore interface {
	// CreateListing lists a VALID ticket of l.SellerID, which becomes LISTED, in one transaction that locks the
	// seller's booking and then the ticket (the order a refund and a transfer claim take): ErrTicketListed,
	// ErrAlreadyCheckedIn, ErrTransferred, ErrTicketVoid, ErrResold or ErrNotFound otherwise.
	CreateListing(ctx context.Context, l Listing) (Listing, error)
	// WithdrawListing ends the seller's LISTED listing of the ticket; the ticket is VALID again. While a buyer's
	// hold of it is live at now (HELD and not yet expired, or PAYMENT_PENDING) it refuses with ErrListingHeld.
	WithdrawListing(ctx context.Context, ticketID, sellerID string, now time.Time) (Listing, error)
	Listing(ctx context.Context, id string) (Listing, error)
	// Listings lists the show's LISTED listings not under a live waitlist offer, cheapest first.
	Listings(ctx context.Context, showID string) ([]Listing, error)
	// AttachResaleHold records that booking is a hold of the listing (offer: the waitlist's), if it is still
	// LISTED; ErrSeatsUnavailable otherwise.
	AttachResaleHold(ctx context.Context, listingID, bookingID string, offer bool) error
	// PayoutOf is the payout a confirmed resale booking owes its seller; ok false when b is no resale.
	PayoutOf(ctx context.Context, buyerBookingID string) (r Refund, ok bool, err error)
	// BookingListings lists every listing of the seller's booking's tickets, newest first.
	BookingListings(ctx context.Context, bookingID string) ([]Listing, error)
	// OfferedListing is the LISTED listing whose waitlist offer is the hold offerBookingID; ok false when none is.
	OfferedListing(ctx context.Context, offerBookingID string) (l Listing, ok bool, err error)
}

// ListRequest puts a ticket on the exchange.
type ListRequest struct {
	TicketID string
	UserID   string
	Price    int64
}

// ListTicket puts the user's paid ticket on the exchange at r.Price and offers it to the show's waitlist first.
func (p *Checkout) ListTicket(ctx context.Context, r ListRequest) (Listing, error) {
	t, err := p.Ticket(ctx, r.TicketID, r.UserID)
	if err != nil {
		return Listing{}, err
	}
	rp, err := p.resaleOpen(ctx, t.ShowID)
	if err != nil {
		return Listing{}, err
	}
	b, err := p.holds.store.Booking(ctx, t.BookingID)
	if err != nil {
		return Listing{}, err
	}
	if b.UserID != r.UserID {
		// The payout can only go back to the card that paid: a ticket received by transfer is not the holder's to sell.
		return Listing{}, Unprocessable("a ticket received by transfer cannot be resold: only the fan who paid for it can")
	}
	seats, err := p.holds.catalog.SeatsOf(ctx, t.ShowID, []string{t.SeatID})
	if err != nil {
		return Listing{}, err
	}
	face := seats[0].Price
	if r.Price <= 0 {
		return Listing{}, Unprocessable("price must be a positive amount in minor units")
	}
	if limit := rp.Cap(face); r.Price > limit {
		return Listing{}, fmt.Errorf("%w: at most %d (%g of the face value %d)", ErrPriceAboveCap, limit, rp.MaxPriceRatio, face)
	}
	l := Listing{ID: shard.ID("rs_", t.ShowID), ShowID: t.ShowID, TicketID: t.ID, BookingID: t.BookingID,
		SellerID: r.UserID, SeatID: t.SeatID, Category: seats[0].Category, FaceValue: face, Price: r.Price,
		Fee: rp.Fee(r.Price), Currency: b.Currency, Status: ListingListed, CreatedAt: p.cfg.Now()}
	if l, err = p.store.CreateListing(ctx, l); err != nil {
		return Listing{}, err
	}
	return p.offerToWaitlist(ctx, l), nil
}

// offerToWaitlist offers a listing to the first fan in the show's line it fits (Waitlist.offerListing) and
// returns it with the offer's hold; with nobody in line, or when the offer fails, it is the public's as it is.
func (p *Checkout) offerToWaitlist(ctx context.Context, l Listing) Listing {
	if p.holds.offerListing == nil {
		return l
	}
	attach := func(ctx context.Context, b Booking) error { return p.store.AttachResaleHold(ctx, l.ID, b.ID, true) }
	ob, ok, err := p.holds.offerListing(ctx, l, attach)
	switch {
	case err != nil:
		// Listed all the same: the public may buy it.
		p.log.WarnContext(ctx, "resale: offer to the waitlist", "listing", l.ID, "err", err)
	case ok:
		l.OfferBookingID = ob.ID
	}
	return l
}

// reofferListing passes a listing on down the waitlist when the offer made of it, the hold bookingID, lapsed
// (expired or cancelled unpaid): the next fan in line it fits is offered it as the first was; with nobody left it
// stays the public's, which it is as soon as that offer's hold ended. A listing sold, withdrawn or offered again
// since is left alone, so a redelivered event offers nothing twice.
func (p *Checkout) reofferListing(ctx context.Context, bookingID string) error {
	l, ok, err := p.store.OfferedListing(ctx, bookingID)
	if err != nil || !ok {
		return err
	}
	if _, err := p.resaleOpen(ctx, l.ShowID); err != nil {
		if errors.Is(err, ErrResaleClosed) {
			return nil // the exchange closed meanwhile: nobody may buy it now
		}
		return err
	}
	if next := p.offerToWaitlist(ctx, l); next.OfferBookingID != l.OfferBookingID {
		p.log.InfoContext(ctx, "resale: offered again", "listing", l.ID, "lapsed", bookingID, "offer", next.OfferBookingID)
	}
	return nil
}

// WithdrawListing takes the user's ticket off the exchange, before it is sold; it admits again. Not while a
// buyer holds it (ErrListingHeld): that buyer, or the waitlist's fan it was offered to, may be paying right now,
// and pulling the seat from under them would fail a payment already authorized (the sale's transaction would
// refuse it) for a seller who gets the ticket back within the hold's few minutes anyway. So it is on a platform
// where a listing in a buyer's basket is locked: the seller withdraws once that hold ends unpaid.
func (p *Checkout) WithdrawListing(ctx context.Context, ticketID, userID string) (Listing, error) {
	if _, err := p.Ticket(ctx, ticketID, userID); err != nil {
		return Listing{}, err
	}
	return p.store.WithdrawListing(ctx, ticketID, userID, p.cfg.Now())
}

// SellerView is the exchange as the holder of a booking sees it: whether the show's exchange takes listings now,
// its policy, the highest price each seat may be listed at, and the booking's listings, newest first.
type SellerView struct {
	Open     bool
	Policy   ResalePolicy
	Caps     map[string]int64 // by seat id
	Currency string
	Listings []Listing
}

// SellerView reads the exchange for the user's booking (the booking page's "Sell at face value").
func (p *Checkout) SellerView(ctx context.Context, bookingID, userID string) (SellerView, error) {
	b, err := p.holds.Booking(ctx, bookingID, userID)
	if err != nil {
		return SellerView{}, err
	}
	v := SellerView{Currency: b.Currency}
	switch v.Policy, err = p.resaleOpen(ctx, b.ShowID); {
	case err == nil:
		v.Open = true
	case errors.Is(err, ErrResaleClosed):
		tp, err := p.TicketPolicy(ctx, b.ShowID)
		if err != nil {
			return SellerView{}, err
		}
		v.Policy = tp.Resale
	default:
		return SellerView{}, err
	}
	seats, err := p.holds.catalog.SeatsOf(ctx, b.ShowID, b.SeatIDs)
	if err != nil {
		return SellerView{}, err
	}
	v.Caps = make(map[string]int64, len(seats))
	for _, st := range seats {
		v.Caps[st.ID] = v.Policy.Cap(st.Price)
	}
	if v.Listings, err = p.store.BookingListings(ctx, b.ID); err != nil {
		return SellerView{}, err
	}
	return v, nil
}

// Listings is the show's exchange as the public sees it.
func (p *Checkout) Listings(ctx context.Context, showID string) ([]Listing, error) {
	if _, err := p.holds.catalog.Show(ctx, showID); err != nil {
		return nil, err
	}
	return p.store.Listings(ctx, showID)
}

// Listing reads one listing (its show, for the buyer's admission token).
func (p *Checkout) Listing(ctx context.Context, id string) (Listing, error) {
	if !ValidID(id) {
		return Listing{}, fmt.Errorf("listing: %w", ErrNotFound)
	}
	return p.store.Listing(ctx, id)
}

// BuyRequest buys a listing.
type BuyRequest struct {
	ListingID      string
	UserID         string
	AdmissionToken string
	Language       string
}

// BuyListing holds the listing's seat for the buyer at the listing's price: a HELD booking, paid with Pay. Of
// buyers racing for one listing the resale claim gives the seat to one; the rest are refused as for a seat taken.
func (p *Checkout) BuyListing(ctx context.Context, r BuyRequest) (Booking, error) {
	l, err := p.Listing(ctx, r.ListingID)
	if err != nil {
		return Booking{}, err
	}
	if l.Status != ListingListed {
		return Booking{}, listingGone(l)
	}
	if l.SellerID == r.UserID {
		return Booking{}, Unprocessable("this is your own listing: withdraw it instead")
	}
	if _, err := p.resaleOpen(ctx, l.ShowID); err != nil {
		return Booking{}, err
	}
	b, err := p.holds.holdResale(ctx, HoldRequest{UserID: r.UserID, ShowID: l.ShowID, SeatIDs: []string{l.SeatID},
		AdmissionToken: r.AdmissionToken, Language: r.Language, resalePrice: l.Price}, true)
	if err != nil {
		return Booking{}, err
	}
	if err := p.store.AttachResaleHold(ctx, l.ID, b.ID, false); err != nil {
		// The listing was withdrawn or sold since it was read: the buyer lost a race, not their admission.
		if _, _, cerr := p.holds.undo(context.WithoutCancel(ctx), b.ID, b.UserID); cerr != nil {
			p.log.WarnContext(ctx, "resale: cancel an unattached hold", "booking", b.ID, "err", cerr)
		}
		return Booking{}, err
	}
	return b, nil
}

// listingGone is the refusal of a listing sold or withdrawn: its seat is taken, as a hold would be told.
func listingGone(l Listing) error {
	return fmt.Errorf("listing %s is %s: %w", l.ID, l.Status, &ConflictError{Unavailable: []string{l.SeatID}, Alternatives: []string{}})
}

// resaleOpen returns the show's resale policy, or ErrResaleClosed when the exchange is off or the show started.
func (p *Checkout) resaleOpen(ctx context.Context, showID string) (ResalePolicy, error) {
	show, err := p.holds.catalog.Show(ctx, showID)
	if err != nil {
		return ResalePolicy{}, err
	}
	tp, err := p.TicketPolicy(ctx, showID)
	if err != nil {
		return ResalePolicy{}, err
	}
	if !tp.Resale.Enabled {
		return ResalePolicy{}, fmt.Errorf("%w: the organiser does not run an exchange for this show", ErrResaleClosed)
	}
	if !p.cfg.Now().Before(show.StartsAt) {
		return ResalePolicy{}, fmt.Errorf("%w: the show has started", ErrResaleClosed)
	}
	return tp.Resale, nil
}

// settlePayout pays the seller of a confirmed resale booking: the payout is a refund of the seller's payment,
// settled like any refund (and by the worker when this attempt fails).
func (p *Checkout) settlePayout(ctx context.Context, buyerBookingID string) {
	r, ok, err := p.store.PayoutOf(ctx, buyerBookingID)
	if err != nil {
		p.log.WarnContext(ctx, "resale: payout", "booking", buyerBookingID, "err", err)
		return
	}
	if ok && !r.Succeeded {
		p.settleRefund(ctx, r)
	}
}

// holdResale takes a hold on a listed seat: the same validation, claim (hold.lua, its resale form), fencing and
// ledger row as any hold, at the listing's price. admit: through the waiting room, as a hold is; false for the
// waitlist's offer, whose fan the waitlist admitted.
func (s *Holds) holdResale(ctx context.Context, r HoldRequest, admit bool) (Booking, error) {
	t, seats, err := s.validateHold(ctx, r, nil)
	if err != nil {
		return Booking{}, err
	}
	var claims *admitted
	if admit {
		if claims, err = s.admit(ctx, r.ShowID, r.UserID, r.AdmissionToken); err != nil {
			return Booking{}, err
		}
	}
	return s.hold(ctx, r, t, seats, claims)
}
