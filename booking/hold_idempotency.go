package booking

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"time"
)

// A hold request may carry an Idempotency-Key: one hold per key and request, and a repeat (a fan's retry, the
// edge's replay after a broken connection) is answered with the first request's booking, so a fan whose answer was
// lost never holds twice.

// IdempotencyRecord is what is known about an Idempotency-Key already used.
type IdempotencyRecord struct {
	RequestHash string
	ResultID    string // empty while the first request is still running
	// TakenOver says the key was claimed from a request that left it pending too long to be still running; Age
	// is how long before that it had been claimed.
	TakenOver bool
	Age       time.Duration
}

// hash identifies the request body for idempotency: same show and same seats in the same order.
func (r HoldRequest) hash() string {
	h := sha256.New()
	h.Write([]byte(r.ShowID))
	for _, id := range r.SeatIDs {
		h.Write([]byte{0})
		h.Write([]byte(id))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// holdScope is a hold's idempotency scope: a key belongs to one user and one show, so its record lives with the
// show's other rows (on the show's shard when the ledger is sharded, shared/shard) and a shard's outage never
// stops another show's holds. The same key for another show is another request.
func holdScope(showID string) string { return "hold:" + showID }

// holdIdempotent is Hold for a request with an Idempotency-Key: the first request with the key holds, and every
// repeat of the same request is answered with that hold's booking (replayed true), waiting for it if the first is
// still running; the same key with another request is ErrIdempotency.
//
// A first request that died with its process (a SIGKILL) or lost Postgres under it (a restart, so that giving the
// key up failed too) leaves the key pending for good, and every retry the contract asks for would wait and answer
// in-progress forever. So a key pending longer than any hold request runs (orphanGrace: the claim and the row's
// insert share one claimWindow, and the margin the orphan sweep allows) is taken over by the retry that finds it
// so: it is answered with the booking the dead request made, if it got that far, or else holds afresh.
func (s *Holds) holdIdempotent(ctx context.Context, r HoldRequest, t holdTarget, seats []Seat,
	claims *admitted) (Booking, bool, error) {
	hash := r.hash()
	for {
		rec, claimed, err := s.store.BeginIdempotent(ctx, r.UserID, holdScope(r.ShowID), r.IdempotencyKey, hash,
			s.orphanGrace())
		if err != nil {
			return Booking{}, false, err
		}
		if claimed && rec.TakenOver {
			// On an error the key stays pending, not given up: a retry holding afresh could hold the seats
			// twice, and the next to find the key stale looks again.
			b, ok, err := s.madeFor(ctx, r, rec.Age)
			if err == nil && ok {
				err = s.store.FinishIdempotent(ctx, r.UserID, holdScope(r.ShowID), r.IdempotencyKey, b.ID)
			}
			if err != nil {
				return Booking{}, false, err
			}
			if ok {
				return b, true, nil
			}
		}
		if claimed {
			break
		}
		if rec.RequestHash != hash {
			return Booking{}, false, fmt.Errorf("%w: Idempotency-Key was used with another request", ErrIdempotency)
		}
		if rec.ResultID != "" {
			b, err := s.store.Booking(ctx, rec.ResultID)
			return b, true, err
		}
		// The first request with this key is still running: wait for its outcome rather than hold twice.
		if b, done, err := s.awaitIdempotent(ctx, r, hash); done || err != nil {
			return b, true, err
		}
		// The first request failed and gave the key up; try to claim it ourselves.
	}
	b, err := s.hold(ctx, r, t, seats, claims)
	if err != nil {
		// A failed hold leaves nothing behind, so the key is free for a retry.
		return Booking{}, false, s.abandonKey(ctx, r, err)
	}
	if err := s.store.FinishIdempotent(ctx, r.UserID, holdScope(r.ShowID), r.IdempotencyKey, b.ID); err != nil {
		return Booking{}, false, err
	}
	return b, false, nil
}

// abandonKey gives the request's key up after err, so that a retry runs afresh, and returns err.
func (s *Holds) abandonKey(ctx context.Context, r HoldRequest, err error) error {
	if aerr := s.store.AbortIdempotent(context.WithoutCancel(ctx), r.UserID, holdScope(r.ShowID), r.IdempotencyKey); aerr != nil {
		s.log.ErrorContext(ctx, "idempotency abort", "err", aerr)
	}
	return err
}

// madeFor finds the booking a dead request with r's key made before it died, if it got that far: the user's
// booking of the same show and the same seats in the same order (the request's hash), made since the key was
// claimed, age ago (a second's margin for the clocks of booking and Postgres).
func (s *Holds) madeFor(ctx context.Context, r HoldRequest, age time.Duration) (Booking, bool, error) {
	bs, err := s.store.UserBookings(ctx, r.UserID, 50)
	if err != nil {
		return Booking{}, false, err
	}
	since := s.cfg.Now().Add(-age - time.Second)
	for _, b := range bs {
		if b.ShowID == r.ShowID && slices.Equal(b.SeatIDs, r.SeatIDs) && !b.CreatedAt.Before(since) {
			return b, true, nil
		}
	}
	return Booking{}, false, nil
}

// awaitIdempotent polls a pending key for up to five seconds. done is false when the key was given up.
func (s *Holds) awaitIdempotent(ctx context.Context, r HoldRequest, hash string) (Booking, bool, error) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return Booking{}, false, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		// No takeover here: a key that grows stale while it is awaited is answered in-progress, and taken over
		// by the retry that follows, which looks for what its request made first.
		rec, claimed, err := s.store.BeginIdempotent(ctx, r.UserID, holdScope(r.ShowID), r.IdempotencyKey, hash, 0)
		if err != nil {
			return Booking{}, false, err
		}
		if claimed {
			// We now own the key; give it back so the caller's loop claims it cleanly.
			if err := s.store.AbortIdempotent(ctx, r.UserID, holdScope(r.ShowID), r.IdempotencyKey); err != nil {
				return Booking{}, false, err
			}
			return Booking{}, false, nil
		}
		if rec.ResultID != "" {
			b, err := s.store.Booking(ctx, rec.ResultID)
			return b, true, err
		}
	}
	return Booking{}, false, ErrInProgress
}
