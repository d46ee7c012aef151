package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/strictjson"
)

// Refunds of some or all seats of a booking, the quote a fan reads before confirming one, and the operator's
// per-show ticket policy (refund tiers and fee).

// maxSeatIDLen bounds a seat id in a refund's body or query; real ones are a row and a number.
const maxSeatIDLen = 16

type refundRequest struct {
	SeatIDs []string `json:"seatIds"`
}

// refundTarget reads a refund's booking and its optional body: none (or an empty one) refunds every seat still
// paid. The body is read strictly, the fan's as the operator's: a misspelt "seatIds" must not refund them all.
func refundTarget(c *fiber.Ctx) (string, []string, error) {
	id, err := pathID(c, "bookingId", "booking")
	if err != nil || len(bytes.TrimSpace(c.Body())) == 0 {
		return id, nil, err
	}
	var req refundRequest
	if err := decodeStrict(c, &req); err != nil {
		return "", nil, err
	}
	if req.SeatIDs != nil && len(req.SeatIDs) == 0 {
		return "", nil, booking.Unprocessable("seatIds is empty: name the seats to refund, or send no body to refund all")
	}
	seats, err := checkSeatIDs(req.SeatIDs)
	return id, seats, err
}

func checkSeatIDs(ids []string) ([]string, error) {
	if len(ids) > 64 {
		return nil, booking.Unprocessable("seatIds: too many seats")
	}
	for _, id := range ids {
		if id == "" || len(id) > maxSeatIDLen {
			return nil, booking.Unprocessable("seatIds: %q is not a seat id", id)
		}
	}
	return ids, nil
}

func (s *Server) refund(c *fiber.Ctx) error {
	id, seats, err := refundTarget(c)
	if err != nil {
		return err
	}
	b, err := s.cfg.Checkout.Refund(c.UserContext(), booking.RefundRequest{BookingID: id, UserID: UserID(c), SeatIDs: seats})
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(s.bookingDetail(c.UserContext(), b))
}

// refundQuoteJSON is GET /api/v1/bookings/{id}/refund: what refunding the seats would give back now.
type refundQuoteJSON struct {
	BookingID   string    `json:"bookingId"`
	SeatIDs     []string  `json:"seatIds"`
	SeatsAmount int64     `json:"seatsAmount"`
	Percent     int       `json:"percent"`
	FeePerSeat  int64     `json:"feePerSeat"`
	Amount      int64     `json:"amount"`
	Currency    string    `json:"currency"`
	Until       time.Time `json:"until"`
}

// refundQuote is GET /api/v1/bookings/{id}/refund?seatIds=A1,A2: the amount a fan confirms before refunding.
func (s *Server) refundQuote(c *fiber.Ctx) error {
	id, err := pathID(c, "bookingId", "booking")
	if err != nil {
		return err
	}
	var seats []string
	if v := c.Query("seatIds"); v != "" {
		if seats, err = checkSeatIDs(strings.Split(strings.Clone(v), ",")); err != nil {
			return err
		}
	}
	q, err := s.cfg.Checkout.QuoteRefund(c.UserContext(), booking.RefundRequest{BookingID: id, UserID: UserID(c), SeatIDs: seats})
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(refundQuoteJSON{BookingID: q.BookingID, SeatIDs: q.SeatIDs, SeatsAmount: q.SeatsAmount,
		Percent: q.Percent, FeePerSeat: q.Fee, Amount: q.Amount, Currency: q.Currency, Until: q.Until})
}

func (s *Server) adminRefund(c *fiber.Ctx) error {
	id, seats, err := refundTarget(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	owner, err := s.svc.AdminBooking(ctx, id)
	if err != nil {
		return err
	}
	before, err := s.cfg.Checkout.BookingView(ctx, id, owner.UserID)
	if err != nil {
		return err
	}
	b, err := s.cfg.Checkout.AdminRefund(ctx, id, seats)
	if err != nil {
		return err
	}
	if len(b.Refunds) != len(before.Refunds) { // a replay refunded nothing: nothing to record
		r := b.Refunds[len(b.Refunds)-1]
		s.record(c, "booking.refund", b.ShowID, fiber.Map{"bookingId": id, "status": before.Status},
			fiber.Map{"bookingId": id, "status": b.Status, "seatIds": r.SeatIDs, "amount": r.AmountDue})
	}
	return c.JSON(s.bookingDetail(c.UserContext(), b))
}

type tierJSON struct {
	UntilHoursBefore float64 `json:"untilHoursBefore"`
	Percent          int     `json:"percent"`
}

type refundPolicyJSON struct {
	Tiers    []tierJSON `json:"tiers"`
	FeeMinor int64      `json:"feeMinor"`
	// Default is true while the show follows the deployment's REFUND_WINDOW (answers only).
	Default bool `json:"default"`
	// ClosesAt is when the last tier ends (answers only).
	ClosesAt *time.Time `json:"closesAt,omitempty"`
}

// adminShowJSON is GET and PUT /admin/v1/shows/{id}: the show's sale and its ticket policy.
type adminShowJSON struct {
	saleJSON
	Title          string             `json:"title"`
	StartsAt       time.Time          `json:"startsAt"`
	Venue          string             `json:"venue"`
	Hall           string             `json:"hall"`
	Currency       string             `json:"currency"`
	RefundPolicy   refundPolicyJSON   `json:"refundPolicy"`
	TransferPolicy transferPolicyJSON `json:"transferPolicy"`
	ResalePolicy   resalePolicyJSON   `json:"resalePolicy"`
	// TicketCodes is "static" or "rotating" (docs/TICKETS.md).
	TicketCodes booking.TicketCodes `json:"ticketCodes"`
}

// transferPolicyJSON is the show's switch for ticket transfers and its optional cut-off, in hours before the show.
type transferPolicyJSON struct {
	Enabled     bool     `json:"enabled"`
	CutoffHours *float64 `json:"cutoffHours"`
	// ClosesAt is when transfers close: the cut-off, else the show's start (answers only; absent when off).
	ClosesAt *time.Time `json:"closesAt,omitempty"`
}

func (s *Server) showPolicyJSON(sh booking.Show, tp booking.TicketPolicy) adminShowJSON {
	out := adminShowJSON{saleJSON: sale(sh), Title: sh.Title, StartsAt: sh.StartsAt, Venue: sh.Venue, Hall: sh.Hall,
		Currency: sh.Currency, RefundPolicy: refundPolicyJSON{Tiers: []tierJSON{}, FeeMinor: tp.Refund.FeeMinor,
			Default: tp.Refund.Default}}
	for _, t := range tp.Refund.Tiers {
		out.RefundPolicy.Tiers = append(out.RefundPolicy.Tiers, tierJSON(t))
	}
	if len(tp.Refund.Tiers) > 0 {
		at := tp.Refund.ClosesAt(sh.StartsAt)
		out.RefundPolicy.ClosesAt = &at
	}
	out.TransferPolicy = transferPolicyJSON{Enabled: tp.Transfer.Enabled, CutoffHours: tp.Transfer.CutoffHours}
	out.ResalePolicy = resalePolicyJSON(tp.Resale)
	out.TicketCodes = tp.Codes
	if tp.Transfer.Enabled {
		at := tp.Transfer.Until(sh.StartsAt)
		out.TransferPolicy.ClosesAt = &at
	}
	return out
}

func (s *Server) adminShow(c *fiber.Ctx) error {
	id, err := pathID(c, "showId", "show")
	if err != nil {
		return err
	}
	sh, err := s.svc.Show(c.UserContext(), id)
	if err != nil {
		return err
	}
	tp, err := s.cfg.Checkout.TicketPolicy(c.UserContext(), id)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(s.showPolicyJSON(sh, tp))
}

// putShowRequest is PUT /admin/v1/shows/{id}: what it names changes, what it leaves out stays; "refundPolicy":
// null puts the show back on the deployment's default. "transferPolicy" is {"enabled","cutoffHours"}: a field left
// out keeps its value, "cutoffHours": null lets transfers run until the show starts.
type putShowRequest struct {
	RefundPolicy   json.RawMessage `json:"refundPolicy"`
	TransferPolicy json.RawMessage `json:"transferPolicy"`
	ResalePolicy   json.RawMessage `json:"resalePolicy"`
	TicketCodes    *string         `json:"ticketCodes"`
}

// transferPolicy applies a PUT's "transferPolicy" to tp.
func transferPolicy(raw json.RawMessage, tp *booking.TransferPolicy) error {
	const shape = `transferPolicy must be {"enabled": true|false, "cutoffHours": hours before the show or null}`
	if raw == nil {
		return nil
	}
	var req struct {
		Enabled     *bool           `json:"enabled"`
		CutoffHours json.RawMessage `json:"cutoffHours"`
	}
	if err := strictjson.UnmarshalAt("transferPolicy", raw, &req); err != nil || string(raw) == "null" {
		return memberError(err, shape)
	}
	if req.Enabled != nil {
		tp.Enabled = *req.Enabled
	}
	switch {
	case req.CutoffHours == nil:
	case string(req.CutoffHours) == "null":
		tp.CutoffHours = nil
	default:
		var h float64
		if err := json.Unmarshal(req.CutoffHours, &h); err != nil {
			return booking.Invalid(shape)
		}
		tp.CutoffHours = &h
	}
	return nil
}

// memberError is a PUT member's decoding error: its unknown fields by their paths, anything else its shape.
func memberError(err error, shape string) error {
	var ue *strictjson.UnknownFieldError
	if errors.As(err, &ue) {
		return fmt.Errorf("%w: %w", booking.ErrValidation, ue)
	}
	return booking.Invalid("%s", shape)
}

type refundPolicyRequest struct {
	Tiers    []tierJSON `json:"tiers"`
	FeeMinor int64      `json:"feeMinor"`
}

func (s *Server) putShowPolicy(c *fiber.Ctx) error {
	id, err := pathID(c, "showId", "show")
	if err != nil {
		return err
	}
	var req putShowRequest
	if err := decodeStrict(c, &req); err != nil {
		return err
	}
	ctx := c.UserContext()
	sh, err := s.svc.Show(ctx, id)
	if err != nil {
		return err
	}
	tp, err := s.cfg.Checkout.TicketPolicy(ctx, id)
	if err != nil {
		return err
	}
	if tp.Refund.Default {
		tp.Refund = nil
	}
	switch {
	case req.RefundPolicy == nil:
	case string(req.RefundPolicy) == "null":
		tp.Refund = nil
	default:
		var rr refundPolicyRequest
		if err := strictjson.UnmarshalAt("refundPolicy", req.RefundPolicy, &rr); err != nil {
			return memberError(err, "refundPolicy must be {\"tiers\":[{\"untilHoursBefore\",\"percent\"}],\"feeMinor\"}")
		}
		rp := booking.RefundPolicy{FeeMinor: rr.FeeMinor, Tiers: []booking.RefundTier{}}
		for _, t := range rr.Tiers {
			rp.Tiers = append(rp.Tiers, booking.RefundTier(t))
		}
		tp.Refund = &rp
	}
	if err := transferPolicy(req.TransferPolicy, &tp.Transfer); err != nil {
		return err
	}
	if err := resalePolicy(req.ResalePolicy, &tp.Resale); err != nil {
		return err
	}
	if req.TicketCodes != nil {
		tp.Codes = booking.TicketCodes(*req.TicketCodes)
		if err := tp.Codes.Validate(); err != nil {
			return err
		}
	}
	old, now, err := s.cfg.Checkout.SetTicketPolicy(ctx, id, tp)
	if err != nil {
		return err
	}
	s.record(c, "show.ticketPolicy", id, s.showPolicyJSON(sh, old), s.showPolicyJSON(sh, now))
	return c.JSON(s.showPolicyJSON(sh, now))
}
