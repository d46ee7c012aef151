package waitroom

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flashseat/flashseat/shared/admission"
)

// Registration: before a verified-fan sale a fan registers for the show (POST /api/v1/shows/{id}/registration),
// through the same guard as a join (the proof of work bound to the show and the identity, spent once; the human
// check and accounts-only when the show's bot protection asks them): a registration is what a place will be
// drawn from, so it must cost what a place costs. The operator then invites registered fans in waves (wave.go),
// and the queue's access setting (admission.Tuning.Access) lets in at the join only the registered or only the
// invited.
//
// PostgreSQL holds the record (RegistrationRecord); Redis holds the copy each join reads (AccessStore): who is
// registered, and who is invited to which lane (rediskey.Invitation). The copy is rebuilt from the record when
// Redis lost it: its marker (rediskey.AccessCopy) is written only once the whole copy is, so a join that finds
// no marker restores first and never refuses a fan on a half-written copy.

// A fan's registration status, as the contract spells them.
const (
	StatusRegistered = "REGISTERED"  // registered, in no wave drawn since
	StatusInvited    = "INVITED"     // invited by a wave: may join from then on, in the wave's lane
	StatusNotInvited = "NOT_INVITED" // registered before the last wave and not drawn in it; in the next draws
)

// Errors of registration.
var (
	ErrNotRegistered = errors.New("waitroom: not registered for this show")
	// ErrContactRequired: a guest registers only with a contact e-mail confirmed by the code mailed to it
	// (booking's PUT /api/v1/me/contact); an account of the identity provider needs none.
	ErrContactRequired = errors.New("waitroom: confirm a contact e-mail first")
)

// Registration is a fan's registration for a show.
type Registration struct {
	ShowID       string    `json:"showId"`
	Status       string    `json:"status"`
	Lane         string    `json:"lane"`             // the invitation's lane ("" the general lane); "" until invited
	WaveID       int       `json:"waveId,omitempty"` // the wave that invited the fan
	FanHash      string    `json:"fanHash"`          // the fan's published hash in the waves' lists (FanHash)
	RegisteredAt time.Time `json:"registeredAt"`
}

// AccessFan is one fan in the access copy: registered, and invited to Lane when Invited.
type AccessFan struct {
	User    string
	Invited bool
	Lane    string
}

// Access is what the copy says of one fan. Copied false: the copy is not whole (Redis lost it); restore first.
type Access struct {
	Copied, Registered, Invited bool
	Lane                        string
}

// AccessStore is the Redis copy of who is registered and invited (waitroom/redis).
type AccessStore interface {
	Access(ctx context.Context, show, user string) (Access, error)
	// CopyAccess writes fans into the copy (idempotent: a fan written twice is one fan).
	CopyAccess(ctx context.Context, show string, fans []AccessFan) error
	// MarkAccessCopied says the copy is whole; ForgetAccessCopy that it may not be (a write to it failed).
	MarkAccessCopied(ctx context.Context, show string) error
	ForgetAccessCopy(ctx context.Context, show string) error
	// SpendProof spends a join proof's id for a registration, as a join would (one proof buys one of either);
	// false when it was spent before.
	SpendProof(ctx context.Context, show, id string, ttl time.Duration) (bool, error)
}

// Register registers the fan in r for r.Show through the guard, or returns their registration if they have one.
// A refusal is a *Refusal of the join's table, carrying what the fan needs to try again.
func (s *Service) Register(ctx context.Context, r JoinRequest) (Registration, bool, error) {
	if err := check(r.Show, r.User); err != nil {
		return Registration{}, false, err
	}
	if s.regs == nil || s.access == nil {
		return Registration{}, false, fmt.Errorf("%w: registrations are not kept here", ErrUnavailable)
	}
	if reg, err := s.regs.Registration(ctx, r.Show, r.User); err == nil {
		// Registered already: no second proof. The copy is written again, in case a failed write lost it.
		return reg, false, s.copyRegistration(ctx, r.Show, reg, r.User)
	} else if !errors.Is(err, ErrNotRegistered) {
		return Registration{}, false, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if !r.Client.Account {
		ok, err := s.regs.ContactConfirmed(ctx, r.User)
		if err != nil {
			return Registration{}, false, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		if !ok {
			return Registration{}, false, ErrContactRequired
		}
	}
	st, err := s.settings(ctx, r.Show)
	if err != nil {
		return Registration{}, false, err
	}
	a := Ask{Verdict: VerdictOK, SolveTime: -1}
	if st.Bot.Enabled {
		// The guard's own checks, as a join with the queue on would meet them, whether or not it is on yet.
		on := st
		on.Enabled = true
		if err := s.earn(ctx, on, r, &a); err != nil {
			return Registration{}, false, err
		}
	}
	if a.Verdict != VerdictOK {
		return Registration{}, false, s.refuseRegistration(ctx, st, r, a.Verdict)
	}
	if a.Spend != "" {
		ok, err := s.access.SpendProof(ctx, r.Show, a.Spend, a.SpendFor)
		if err != nil {
			return Registration{}, false, err
		}
		if !ok {
			return Registration{}, false, s.refuseRegistration(ctx, st, r, ReasonProofReplayed)
		}
	}
	fresh, err := NewSeed() // the first wave's seed, committed with the first registration
	if err != nil {
		return Registration{}, false, err
	}
	reg, created, err := s.regs.Register(ctx, r.Show, r.User, FanHash(r.Show, r.User), fresh)
	if err != nil {
		return Registration{}, false, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return reg, created, s.copyRegistration(ctx, r.Show, reg, r.User)
}

// refuseRegistration is the guard's refusal of a registration, equipped as a join's is.
func (s *Service) refuseRegistration(ctx context.Context, st admission.Settings, r JoinRequest, reason string) error {
	ref := refusal(reason)
	s.observe(GuardEvent{Show: r.Show, Kind: "refused", Reason: reason})
	on := st
	on.Enabled = true
	if err := s.equip(ctx, ref, on, r); err != nil {
		return err
	}
	return ref
}

func (s *Service) copyRegistration(ctx context.Context, show string, reg Registration, user string) error {
	f := AccessFan{User: user, Invited: reg.Status == StatusInvited, Lane: reg.Lane}
	if err := s.access.CopyAccess(ctx, show, []AccessFan{f}); err != nil {
		return fmt.Errorf("%w: the registration is recorded; register again to finish: %w", ErrUnavailable, err)
	}
	return nil
}

// RegistrationOf is the fan's registration: ErrNotRegistered when they have none.
func (s *Service) RegistrationOf(ctx context.Context, show, user string) (Registration, error) {
	if err := check(show, user); err != nil {
		return Registration{}, err
	}
	if s.regs == nil {
		return Registration{}, fmt.Errorf("%w: registrations are not kept here", ErrUnavailable)
	}
	reg, err := s.regs.Registration(ctx, show, user)
	if err != nil && !errors.Is(err, ErrNotRegistered) {
		return reg, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return reg, err
}

// Registrations lists the fan's registrations of every show ("My bookings").
func (s *Service) Registrations(ctx context.Context, user string) ([]Registration, error) {
	if !ValidID(user) {
		return nil, fmt.Errorf("%w: user id", ErrInvalid)
	}
	if s.regs == nil {
		return nil, fmt.Errorf("%w: registrations are not kept here", ErrUnavailable)
	}
	rs, err := s.regs.RegistrationsOf(ctx, user)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return rs, nil
}

// admits is the access setting's verdict on a fan's new place: VerdictOK, ReasonRegistrationRequired or
// ReasonInvitationRequired. A copy Redis lost is rebuilt from the record first.
func (s *Service) admits(ctx context.Context, st admission.Settings, show, user string) (string, error) {
	if !st.Gated() {
		return VerdictOK, nil
	}
	if s.access == nil {
		return "", fmt.Errorf("%w: registrations are not kept here", ErrUnavailable)
	}
	a, err := s.access.Access(ctx, show, user)
	if err != nil {
		return "", err
	}
	if !a.Copied {
		if err := s.restoreAccess(ctx, show); err != nil {
			return "", err
		}
		if a, err = s.access.Access(ctx, show, user); err != nil {
			return "", err
		}
	}
	switch {
	case st.Access == admission.AccessInvited && !a.Invited:
		return ReasonInvitationRequired, nil
	case st.Access == admission.AccessRegistered && !a.Registered && !a.Invited:
		return ReasonRegistrationRequired, nil
	}
	return VerdictOK, nil
}

// restoreAccess rebuilds show's access copy from the record, once at a time per show on this replica; replicas
// restoring together write the same fans.
func (s *Service) restoreAccess(ctx context.Context, show string) error {
	_, err, _ := s.flights.Do("access:"+show, func() (any, error) {
		if s.regs == nil {
			return nil, fmt.Errorf("%w: registrations are not kept here", ErrUnavailable)
		}
		err := s.regs.Registrants(ctx, show, func(fans []AccessFan) error {
			return s.access.CopyAccess(ctx, show, fans)
		})
		if err != nil {
			return nil, fmt.Errorf("%w: restore the access copy: %w", ErrUnavailable, err)
		}
		return nil, s.access.MarkAccessCopied(ctx, show)
	})
	return err
}

// admitsByRecord is admits from PostgreSQL, for the store-down trickle, which cannot read the copy: a sale for
// registered or invited fans stays theirs while Redis is down.
func (s *Service) admitsByRecord(ctx context.Context, st admission.Settings, show, user string) (string, error) {
	if !st.Gated() {
		return VerdictOK, nil
	}
	if s.regs == nil {
		return "", fmt.Errorf("%w: registrations are not kept here", ErrUnavailable)
	}
	reg, err := s.regs.Registration(ctx, show, user)
	switch {
	case errors.Is(err, ErrNotRegistered) && st.Access == admission.AccessRegistered:
		return ReasonRegistrationRequired, nil
	case errors.Is(err, ErrNotRegistered):
		return ReasonInvitationRequired, nil
	case err != nil:
		return "", err
	case st.Access == admission.AccessInvited && reg.Status != StatusInvited:
		return ReasonInvitationRequired, nil
	}
	return VerdictOK, nil
}
