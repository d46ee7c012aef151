// Package sim is the bundled payment gateway simulator: a small HTTP server speaking the subset of Stripe's API
// that booking's stripe adapter uses (create-and-confirm, capture, cancel and retrieve a PaymentIntent; create a
// refund), with Stripe's idempotency-key semantics and signed webhooks. `make run` points booking at it, so the
// code path exercised in development and tests is the one that talks to Stripe in production.
//
// For browsers it also plays Stripe.js's part: POST /v1/payment_methods tokenizes a card with the publishable
// key, from any origin (methods.go), and a 3-D Secure challenge page stands for the card holder's bank
// (challenge.go). The files: config.go, server.go (routing, authentication, idempotency, Run), intents.go,
// methods.go, challenge.go, webhooks.go, ledger.go.
//
// It is a test double of an external system, so its state lives in memory and dies with it. Stripe's public test
// cards decide each outcome (TestCards):
//
//	4242 4242 4242 4242  approves (5555 5555 5555 4444 too)
//	4000 0000 0000 0002  declines with a 402 card_error (4000 0000 0000 9995: insufficient funds)
//	4000 0000 0000 3220  requires 3-D Secure: the intent waits in requires_action for the challenge page
//	4000 0000 0000 0259  the slow card: answers only after SlowDelay, past booking's gateway timeout, then approves
//
// and so do the older test payment method ids, which need no tokenization:
//
//	pm_card_ok        approves (pm_card_visa, pm_card_mastercard too)
//	pm_card_declined  declines with a 402 card_error (pm_card_chargeDeclined too)
//	pm_card_slow      answers only after SlowDelay, longer than booking's gateway timeout, and then approves
//	pm_card_error     fails with a 500 api_error, changing nothing
//	pm_card_threeDSecureRequired  requires 3-D Secure, as the card 4000 0000 0000 3220
package sim

// Test payment methods (see the package comment).
const (
	CardOK       = "pm_card_ok"
	CardDeclined = "pm_card_declined"
	CardSlow     = "pm_card_slow"
	CardError    = "pm_card_error"
	Card3DS      = "pm_card_threeDSecureRequired"
)
