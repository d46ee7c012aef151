package waitroom

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flashseat/flashseat/shared/admission"
)

// Invitation waves: the operator invites count registered fans not yet invited, drawn uniformly at random and
// verifiably (invitefair.go), into a lane. Each wave's seed is committed (its SHA-256 published) before the wave
// is drawn: the first with the show's first registration, each next one in the transaction that draws the one
// before. The draw runs in one PostgreSQL transaction under the show's wave lock, which registrations take
// shared, so the fans it draws from are exactly those registered when it ran and no registration slips in
// between; a fan it invites is marked with the wave, so no later wave draws them again. Then the access copy
// (Redis) is told, and the fans are told (the page reads their status).

// Errors of a wave.
var (
	ErrUnknownLane     = errors.New("waitroom: no such lane")
	ErrNoRegistrations = errors.New("waitroom: nobody has registered for this show")
)

// MaxWave bounds one wave's count: the largest sale's whole registration.
const MaxWave = 10_000_000

// Wave is one invitation wave as published (GET /queue/{show}/waves) and listed to the operator.
type Wave struct {
	WaveID     int        `json:"waveId"`
	Commitment string     `json:"commitment"`     // hex(SHA-256(seed)), published before the draw
	Seed       string     `json:"seed,omitempty"` // revealed once drawn
	DrawnAt    *time.Time `json:"drawnAt,omitempty"`
	Count      int        `json:"count"` // asked for
	Lane       string     `json:"lane"`
	// Eligible is how many registered, not yet invited fans the wave drew from; EligibleSHA256 the digest of
	// their hashes in the published order (EligibleDigest); Invited how many it invited (min(count, eligible)),
	// InvitedSHA256 the digest of theirs in the draw's order.
	Eligible       int    `json:"eligible"`
	EligibleSHA256 string `json:"eligibleSha256,omitempty"`
	Invited        int    `json:"invited"`
	InvitedSHA256  string `json:"invitedSha256,omitempty"`
	DrawnBy        string `json:"drawnBy,omitempty"`
}

// Eligible is one fan a wave draws from: their user id (never published) and FanHash (published).
type Eligible struct {
	User string
	Hash [32]byte
}

// WaveDraw is what the record asks the draw: given the committed seed and the eligible fans (in any order), the
// indexes of the invited, in the draw's order.
type WaveDraw func(seed string, eligible []Eligible) ([]int, error)

// WaveRequest is an operator's order for a wave.
type WaveRequest struct {
	Count int
	Lane  string
	By    string // the operator, as audited
}

// RegistrationRecord keeps registrations, waves and invitations (PostgreSQL; waitroom/postgres).
type RegistrationRecord interface {
	// Register records user's registration for show (hash its FanHash), committing firstSeed as the first wave's
	// seed if no wave is committed yet; created false when they were registered already.
	Register(ctx context.Context, show, user string, hash [32]byte, firstSeed string) (Registration, bool, error)
	// ContactConfirmed reports whether user gave a contact e-mail and confirmed it (booking's record of contacts).
	ContactConfirmed(ctx context.Context, user string) (bool, error)
	// Registration is user's registration; ErrNotRegistered when none.
	Registration(ctx context.Context, show, user string) (Registration, error)
	// RegistrationsOf lists user's registrations of every show, newest first.
	RegistrationsOf(ctx context.Context, user string) ([]Registration, error)
	// Registrants streams every registered fan of show, in batches, for the access copy.
	Registrants(ctx context.Context, show string, each func([]AccessFan) error) error
	// DrawWave draws the committed wave with draw, marks the invited with it and commits nextSeed for the next
	// wave, in one transaction; it returns the wave and its invited fans.
	DrawWave(ctx context.Context, show string, r WaveRequest, nextSeed string, draw WaveDraw) (Wave, []AccessFan, error)
	// Waves lists show's waves, oldest first, the committed next one last (no seed).
	Waves(ctx context.Context, show string) ([]Wave, error)
	// WaveEligible is the hashes a drawn wave drew from, in the published order; ErrUnknownWave when none.
	WaveEligible(ctx context.Context, show string, wave int) ([][32]byte, error)
}

// ErrUnknownWave: no drawn wave of that id.
var ErrUnknownWave = errors.New("waitroom: no such wave")

// DrawWave draws a wave for show and tells the access copy. A copy that could not be told is marked not whole, so
// the next join rebuilds it from the record: the wave stands either way, and drawing again would be a new wave.
func (s *Service) DrawWave(ctx context.Context, show string, r WaveRequest) (Wave, error) {
	switch {
	case !ValidID(show):
		return Wave{}, fmt.Errorf("%w: show id", ErrInvalid)
	case r.Count < 1 || r.Count > MaxWave:
		return Wave{}, fmt.Errorf("%w: count must be in [1, %d]", ErrInvalid, MaxWave)
	case len(r.Lane) > 64:
		return Wave{}, fmt.Errorf("%w: lane: no such lane %q", ErrUnknownLane, r.Lane)
	case s.regs == nil:
		return Wave{}, fmt.Errorf("%w: registrations are not kept here", ErrUnavailable)
	}
	if err := s.checkLane(ctx, show, r.Lane); err != nil {
		return Wave{}, err
	}
	next, err := NewSeed()
	if err != nil {
		return Wave{}, err
	}
	w, invited, err := s.regs.DrawWave(ctx, show, r, next, func(seed string, el []Eligible) ([]int, error) {
		return DrawWave(seed, el, r.Count)
	})
	if errors.Is(err, ErrNoRegistrations) {
		return Wave{}, err
	}
	if err != nil {
		return Wave{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	for i := 0; i < len(invited); i += copyBatch {
		if err := s.access.CopyAccess(ctx, show, invited[i:min(i+copyBatch, len(invited))]); err != nil {
			s.logFailure("copy a wave's invitations", show, err)
			if ferr := s.access.ForgetAccessCopy(context.WithoutCancel(ctx), show); ferr != nil {
				s.logFailure("mark the access copy not whole", show, ferr)
			}
			break
		}
	}
	return w, nil
}

// The lifecycle events of a wave, one per fan it drew from (docs/EVENTS.md): booking mails them.
const (
	EventInvited    = "registration.invited"
	EventPassedOver = "registration.not_invited"
)

// copyBatch is how many fans one write to the access copy carries.
const copyBatch = 10000

// checkLane refuses a wave naming a lane the show's queue settings do not have ("" and the general lane always
// exist: a show without lanes is one general lane).
func (s *Service) checkLane(ctx context.Context, show, lane string) error {
	if lane == "" || lane == admission.GeneralLane {
		return nil
	}
	st, err := s.settings(ctx, show)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if !st.Lanes.Has(lane) {
		return fmt.Errorf("%w: lane: no such lane %q in the show's queue settings", ErrUnknownLane, lane)
	}
	return nil
}

// Waves lists show's waves as published: seeds only of drawn waves.
func (s *Service) Waves(ctx context.Context, show string) ([]Wave, error) {
	if !ValidID(show) {
		return nil, fmt.Errorf("%w: show id", ErrInvalid)
	}
	if s.regs == nil {
		return nil, fmt.Errorf("%w: registrations are not kept here", ErrUnavailable)
	}
	ws, err := s.regs.Waves(ctx, show)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return ws, nil
}

// WaveEligible is the published list a drawn wave drew from: each fan's FanHash, ascending.
func (s *Service) WaveEligible(ctx context.Context, show string, wave int) ([][32]byte, error) {
	if !ValidID(show) {
		return nil, fmt.Errorf("%w: show id", ErrInvalid)
	}
	if s.regs == nil {
		return nil, fmt.Errorf("%w: registrations are not kept here", ErrUnavailable)
	}
	hs, err := s.regs.WaveEligible(ctx, show, wave)
	if err != nil && !errors.Is(err, ErrUnknownWave) {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return hs, err
}
