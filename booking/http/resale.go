package http

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/strictjson"
)

// The face-value exchange (booking/resale.go): a holder lists a ticket (POST /api/v1/tickets/{id}/resale) and
// may withdraw it (DELETE, the same path), and reads their booking's side of it (GET
// /api/v1/bookings/{id}/resale); anyone reads a show's public listings (GET
// /api/v1/shows/{id}/resale); a buyer takes a listing (POST /api/v1/resale/{id}/buy) as a HELD booking paid with
// /pay, gated by the show's queue as a hold is.

func (s *Server) resaleRoutes(v1 fiber.Router) {
	if s.cfg.Checkout == nil {
		return
	}
	v1.Post("/tickets/:ticketId/resale", s.RequireUser, s.listTicket)
	v1.Delete("/tickets/:ticketId/resale", s.RequireUser, s.withdrawListing)
	v1.Get("/bookings/:bookingId/resale", s.RequireUser, s.sellerView)
	v1.Get("/shows/:showId/resale", s.showListings)
	v1.Post("/resale/:listingId/buy", s.limit.handler, s.RequireUser, s.buyListing)
}

// resalePolicyJSON is the show's exchange as PUT and GET /admin/v1/shows/{id} carry it.
type resalePolicyJSON struct {
	Enabled       bool    `json:"enabled"`
	MaxPriceRatio float64 `json:"maxPriceRatio"`
	FeePercent    float64 `json:"feePercent"`
}

// resalePolicy applies a PUT's "resalePolicy" to rp: a field left out keeps its value; null is the default
// (closed, at face value, no fee).
func resalePolicy(raw json.RawMessage, rp *booking.ResalePolicy) error {
	const shape = `resalePolicy must be {"enabled": true|false, "maxPriceRatio": above 0 and at most 1, "feePercent": 0 to below 100}`
	switch {
	case raw == nil:
		return nil
	case string(raw) == "null":
		*rp = booking.DefaultResalePolicy
		return nil
	}
	var req struct {
		Enabled       *bool    `json:"enabled"`
		MaxPriceRatio *float64 `json:"maxPriceRatio"`
		FeePercent    *float64 `json:"feePercent"`
	}
	if err := strictjson.UnmarshalAt("resalePolicy", raw, &req); err != nil {
		return memberError(err, shape)
	}
	if req.Enabled != nil {
		rp.Enabled = *req.Enabled
	}
	if req.MaxPriceRatio != nil {
		rp.MaxPriceRatio = *req.MaxPriceRatio
	}
	if req.FeePercent != nil {
		rp.FeePercent = *req.FeePercent
	}
	return rp.Validate() // here too: the domain takes an all-zero policy for "none given"
}

type listingJSON struct {
	ListingID string                `json:"listingId"`
	TicketID  string                `json:"ticketId"`
	ShowID    string                `json:"showId"`
	SeatID    string                `json:"seatId"`
	Category  string                `json:"category"`
	Price     int64                 `json:"price"`
	Currency  string                `json:"currency"`
	FaceValue int64                 `json:"faceValue"`
	Fee       int64                 `json:"fee"`
	Payout    int64                 `json:"payout"` // what the seller gets once it sells
	Status    booking.ListingStatus `json:"status"`
	// OfferedToWaitlist: the show's waitlist has it first (its fan's hold must lapse before the public may buy).
	OfferedToWaitlist bool      `json:"offeredToWaitlist"`
	CreatedAt         time.Time `json:"createdAt"`
}

func toListingJSON(l booking.Listing) listingJSON {
	return listingJSON{ListingID: l.ID, TicketID: l.TicketID, ShowID: l.ShowID, SeatID: l.SeatID, Category: l.Category,
		Price: l.Price, Currency: l.Currency, FaceValue: l.FaceValue, Fee: l.Fee, Payout: l.Payout(), Status: l.Status,
		OfferedToWaitlist: l.OfferBookingID != "", CreatedAt: l.CreatedAt}
}

// publicListingJSON is a listing as the public reads it: nothing about its seller.
type publicListingJSON struct {
	ListingID string `json:"listingId"`
	SeatID    string `json:"seatId"`
	Category  string `json:"category"`
	Price     int64  `json:"price"`
	Currency  string `json:"currency"`
}

// payoutJSON is one seat a seller sold on the exchange, as their booking lists it.
type payoutJSON struct {
	PayoutID  string    `json:"payoutId"`
	ListingID string    `json:"listingId"`
	SeatIDs   []string  `json:"seatIds"`
	Amount    int64     `json:"amount"` // the price less the fee
	Fee       int64     `json:"fee"`
	Currency  string    `json:"currency"`
	At        time.Time `json:"at"`
	Status    string    `json:"status"` // PENDING until the gateway paid it, then SUCCEEDED
}

func toPayoutJSON(r booking.Refund) payoutJSON {
	rj := toRefundJSON(r)
	return payoutJSON{PayoutID: r.ID, ListingID: r.ListingID, SeatIDs: r.SeatIDs, Amount: r.AmountDue, Fee: r.Fee,
		Currency: r.Currency, At: r.At, Status: rj.Status}
}

type listRequest struct {
	Price *int64 `json:"price"`
}

func (s *Server) listTicket(c *fiber.Ctx) error {
	id, err := pathID(c, "ticketId", "ticket")
	if err != nil {
		return err
	}
	var req listRequest
	if err := decodeStrict(c, &req); err != nil {
		return err
	}
	if req.Price == nil {
		return booking.Unprocessable("price is required, in minor units of the show's currency")
	}
	l, err := s.cfg.Checkout.ListTicket(c.UserContext(), booking.ListRequest{TicketID: id, UserID: UserID(c), Price: *req.Price})
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Status(fiber.StatusCreated).JSON(toListingJSON(l))
}

func (s *Server) withdrawListing(c *fiber.Ctx) error {
	id, err := pathID(c, "ticketId", "ticket")
	if err != nil {
		return err
	}
	l, err := s.cfg.Checkout.WithdrawListing(c.UserContext(), id, UserID(c))
	if err != nil {
		return err
	}
	return c.JSON(toListingJSON(l))
}

// sellerView is GET /api/v1/bookings/{id}/resale: the exchange as the booking's holder sees it, for the booking
// page's "Sell at face value" (open, the policy, each seat's cap) and its tickets' "Listed"/"Resold" states.
func (s *Server) sellerView(c *fiber.Ctx) error {
	id, err := pathID(c, "bookingId", "booking")
	if err != nil {
		return err
	}
	v, err := s.cfg.Checkout.SellerView(c.UserContext(), id, UserID(c))
	if err != nil {
		return err
	}
	type seatCap struct {
		SeatID string `json:"seatId"`
		Cap    int64  `json:"cap"` // the highest price this seat may be listed at
	}
	caps := make([]seatCap, 0, len(v.Caps))
	for seat, limit := range v.Caps {
		caps = append(caps, seatCap{SeatID: seat, Cap: limit})
	}
	slices.SortFunc(caps, func(a, b seatCap) int { return strings.Compare(a.SeatID, b.SeatID) })
	listings := make([]listingJSON, 0, len(v.Listings))
	for _, l := range v.Listings {
		listings = append(listings, toListingJSON(l))
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"open": v.Open, "policy": resalePolicyJSON(v.Policy), "currency": v.Currency,
		"seats": caps, "listings": listings})
}

func (s *Server) showListings(c *fiber.Ctx) error {
	id, err := pathID(c, "showId", "show")
	if err != nil {
		return err
	}
	ls, err := s.cfg.Checkout.Listings(c.UserContext(), id)
	if err != nil {
		return err
	}
	out := make([]publicListingJSON, 0, len(ls))
	for _, l := range ls {
		out = append(out, publicListingJSON{ListingID: l.ID, SeatID: l.SeatID, Category: l.Category, Price: l.Price,
			Currency: l.Currency})
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"listings": out})
}

func (s *Server) buyListing(c *fiber.Ctx) error {
	id, err := pathID(c, "listingId", "listing")
	if err != nil {
		return err
	}
	// The listing's show is known only once it is read: the admission token is read for it after.
	l, err := s.cfg.Checkout.Listing(c.UserContext(), id)
	if err != nil {
		return err
	}
	b, err := s.cfg.Checkout.BuyListing(c.UserContext(), booking.BuyRequest{ListingID: id, UserID: UserID(c),
		AdmissionToken: AdmissionToken(c, l.ShowID), Language: pageLanguage(c)})
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(holdResponse{BookingID: b.ID, Status: booking.StatusHeld,
		ShowID: b.ShowID, SeatIDs: b.SeatIDs, ExpiresAt: b.ExpiresAt, TotalAmount: b.TotalAmount, Currency: b.Currency})
}
