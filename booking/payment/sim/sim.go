// Package sim is the bundled payment gateway simulator: a small HTTP server speaking the subset of Stripe's API
// that booking's stripe adapter uses (create-and-confirm, capture, cancel and retrieve a PaymentIntent; create a
// refund), with Stripe's idempotency-key semantics and signed webhooks. `make run` points booking at it, so the
// code path exercised in development and tests is the one that talks to Stripe in production.
//
// It is a test double of an external system, so its state lives in memory and dies with it. The contract's test
// payment methods decide each outcome:
//
//	pm_card_ok        approves (pm_card_visa, pm_card_mastercard too)
//	pm_card_declined  declines with a 402 card_error (pm_card_chargeDeclined too)
//	pm_card_slow      answers only after SlowDelay, longer than booking's gateway timeout, and then approves
//	pm_card_error     fails with a 500 api_error, changing nothing
package sim

// Test payment methods (see the package comment).
const (
	CardOK       = "pm_card_ok"
	CardDeclined = "pm_card_declined"
	CardSlow     = "pm_card_slow"
	CardError    = "pm_card_error"
)
