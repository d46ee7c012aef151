package waitroom

import (
	"context"
	"time"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/pow"
)

// Guest identities cost something: minting one (POST /api/v1/auth/guest, which the edge guards before booking
// mints it) is free for the first few from an address prefix, needs the same proof of work as a join once the
// prefix mints more than a person ever would, and is refused past a limit. One identity holds one place, so an
// identity that costs nothing would make every other defence per identity worthless.

// GuestPolicy is the deployment's limit on minting guest identities, per address prefix.
type GuestPolicy struct {
	Free     float64       // identities a prefix mints with no proof (a decayed count)
	Limit    float64       // past it, the prefix is refused until its count decays
	HalfLife time.Duration // how fast a prefix's count decays
	// Base and Max bound the proof's difficulty, which doubles every Doubling identities past Free: gentler than
	// a join's, since a shared address (an office, a carrier NAT) mints for many people, and the join after it
	// is where a place is priced.
	Base, Max int64
	Doubling  float64
}

// DefaultGuestPolicy: ten identities in a few minutes is more than anyone needs; 300 covers an office of fans.
func DefaultGuestPolicy() GuestPolicy {
	return GuestPolicy{Free: 10, Limit: 300, HalfLife: 10 * time.Minute, Base: 100_000, Max: 20_000_000, Doubling: 40}
}

// GuestStore keeps the guest limit's counts.
type GuestStore interface {
	// GuestPressure returns prefix's decayed count of guest mints, counting this one when count is true.
	GuestPressure(ctx context.Context, prefix string, halfLife time.Duration, count bool) (float64, error)
	// SpendGuestProof records a guest proof as used until ttl passes; false if it was used before.
	SpendGuestProof(ctx context.Context, id string, ttl time.Duration) (bool, error)
}

// MintGuest decides whether a client of prefix may mint a guest identity, bringing proof (a solved guest
// challenge, or ""). A refusal is a *Refusal with a fresh challenge where a proof would help.
func (s *Service) MintGuest(ctx context.Context, prefix, proof string) error {
	g := s.opt.Guests
	if s.opt.PoW == nil || s.guests == nil {
		return nil
	}
	var sol pow.Solution
	var verr error = pow.ErrMalformed
	now := time.Now()
	if proof != "" {
		sol, verr = s.opt.PoW.Verify(proof, pow.GuestScope, "", now)
	}
	// A valid proof was earned by a request counted when it was refused: it is not counted again, so a fan who
	// solves costs their prefix one, not two.
	p, err := s.guests.GuestPressure(ctx, prefix, g.HalfLife, verr != nil)
	if err != nil {
		return err
	}
	switch {
	case p > g.Limit:
		return refusal(ReasonPrefixLimited)
	case p <= g.Free && verr != nil:
		return nil
	case verr == nil:
		ok, err := s.guests.SpendGuestProof(ctx, sol.ID, sol.ExpiresAt.Sub(now)+time.Second)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		return s.guestRefusal(ReasonProofReplayed, p)
	default:
		return s.guestRefusal(proofVerdict(proof, verr), p)
	}
}

func (s *Service) guestRefusal(reason string, pressure float64) error {
	g := s.opt.Guests
	b := admission.BotProtection{BaseDifficulty: g.Base, MaxDifficulty: g.Max, FreeChallenges: g.Free,
		DoublingChallenges: g.Doubling}
	ref := refusal(reason)
	if c, cerr := s.opt.PoW.Issue(pow.Terms{Scope: pow.GuestScope, MaxNumber: Difficulty(b, pressure, 0),
		TTL: ChallengeTTL}, time.Now()); cerr == nil {
		ref.Challenge = &c
	}
	return ref
}
