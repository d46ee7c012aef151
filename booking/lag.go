package booking

import "context"

// Reads that may lag. A store with a read replica (DATABASE_READ_URL) serves a read from it only when the read's
// context says the answer may be a moment old (MayLag); every other read, and every write, goes to the primary.
// The rule for which reads may lag: a page that only shows something, whose next step a fan or an operator takes
// is checked again against the primary, may be a second behind: the catalog's directory (Search), a fan's list of
// bookings (Mine), the operator's figures (Overview, Stats, UserBookings). Nothing that decides a sale may:
// holds, confirmations, payments, refunds, transfers, check-in and admission read the primary, and so do the
// show and layout reads, because the catalog's cache keeps what they read for the holds that follow.

type lagKey struct{}

// MayLag marks ctx: a read under it may be served by a replica up to its lag bound behind the primary.
func MayLag(ctx context.Context) context.Context { return context.WithValue(ctx, lagKey{}, true) }

// LagAccepted reports whether ctx was marked by MayLag.
func LagAccepted(ctx context.Context) bool { v, _ := ctx.Value(lagKey{}).(bool); return v }
