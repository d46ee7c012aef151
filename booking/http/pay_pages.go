package http

import (
	"github.com/gofiber/fiber/v2"
)

// The pages after a hold: the checkout (/checkout/{bookingId}), the booking's confirmation and tickets
// (/bookings/{bookingId}, where a 3-D Secure challenge also returns) and "My bookings" (/bookings). Each is the
// same HTML for everyone; its script reads the fan's booking through the API with the session cookie, so the HTML
// holds nothing personal and a missing or foreign booking is said by the script, from the API's 404.

// stripeJS is where Stripe.js is served from; Stripe requires loading it from there, never a copy.
const stripeJS = "https://js.stripe.com"

type checkoutData struct {
	BookingID string
	Gateway   PublicGateway
}

// checkoutPage lets the fan pay for a hold. The card goes from the page to the gateway's tokenization (the
// simulator's /v1/payment_methods, or Stripe.js), never to booking: only the pm_... id comes here. So the page's
// Content-Security-Policy lets it connect to the gateway's origin (and, with Stripe, load Stripe.js and its frames).
func (s *Server) checkoutPage(c *fiber.Ctx) error {
	id, err := pathID(c, "bookingId", "booking")
	if err != nil {
		return err
	}
	gw := s.cfg.Gateway
	p := Page{Title: "Checkout", Scripts: []string{"checkout.js"}, ConnectSrc: []string{gw.APIBase},
		Data: checkoutData{BookingID: id, Gateway: gw}}
	if gw.Provider == "stripe" {
		p.ScriptSrc = []string{stripeJS}
		p.FrameSrc = []string{stripeJS, "https://hooks.stripe.com"}
		p.ConnectSrc = append(p.ConnectSrc, "https://api.stripe.com")
	}
	return s.render(c, fiber.StatusOK, "checkout", p)
}

// bookingPage shows one booking: Confirmed with its tickets' QR codes, or where its payment stands.
func (s *Server) bookingPage(c *fiber.Ctx) error {
	id, err := pathID(c, "bookingId", "booking")
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "booking", Page{Title: "Your booking", Nav: "bookings",
		Scripts: []string{"booking.js"}, Data: bookingPageData{ID: id, Wallet: s.cfg.Passes != nil}})
}

// bookingsPage lists the fan's bookings, with cancel and refund where they apply.
func (s *Server) bookingsPage(c *fiber.Ctx) error {
	return s.render(c, fiber.StatusOK, "bookings", Page{Title: "My bookings", Nav: "bookings",
		Scripts: []string{"bookings.js"}})
}

// transferPage is a transfer's claim page, /transfers/{id}: the link's secret is its fragment, which only the
// page's script reads, so this HTML is the same for everyone and holds nothing personal.
func (s *Server) transferPage(c *fiber.Ctx) error {
	id, err := pathID(c, "transferId", "transfer")
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "transfer", Page{Title: "A ticket for you", Nav: "bookings",
		Scripts: []string{"claim.js"}, Data: id})
}

// bookingPageData is what the booking page's markup needs: the booking, and whether to offer Add to Apple Wallet
// (only when a pass certificate is configured; otherwise the pass is a 404).
type bookingPageData struct {
	ID     string
	Wallet bool
}
