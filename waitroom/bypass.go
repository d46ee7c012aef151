package waitroom

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flashseat/flashseat/shared/admission"
)

// Bypass codes: an operator issues codes for a show (staff, partners, fans with accessibility needs), each good for
// a number of uses until it expires; a fan who presents a valid one at join is admitted at once, skipping the line
// and the proof of work, with the same admission a turn in line gives (recorded, signed, counted among the show's
// active admissions, so the line admits one fewer fan while it lasts).
//
// A code is 20 characters of Crockford's base32, 100 random bits, shown in groups of five. Only its hash is
// recorded (BypassHash, bound to the show), so neither the record nor the audit log can give a code away, and
// guessing one is hopeless. A use is redeemed in one PostgreSQL transaction that locks the code's row, counts the
// use and records the fan's admission (BypassRecord.RedeemBypass): two fans racing for a code's last use get one
// admission between them, and a use is never counted without its admission. The fan presenting the code again,
// while that admission lasts, gets it back without spending another use. Only then is the admission written to
// the store (bypass.lua), which takes the fan out of the line if they were in it.

// Errors of a bypass code. A refused code leaves the fan free to join the line as anyone would.
var (
	ErrBypassUnknown = errors.New("waitroom: no such bypass code")            // unknown, mistyped or forged
	ErrBypassExpired = errors.New("waitroom: the bypass code has expired")    // past its expiry
	ErrBypassUsedUp  = errors.New("waitroom: the bypass code is used up")     // every use taken
	ErrBypassRevoked = errors.New("waitroom: the bypass code was revoked")    // by an operator
	ErrBypassNotNow  = errors.New("waitroom: the queue is not admitting now") // before opening, or paused
)

// BypassCode is one code as recorded: its plain text only in the answer that issued it.
type BypassCode struct {
	ID        string     `json:"id"`
	Code      string     `json:"code,omitempty"`
	Hint      string     `json:"hint"` // the code's first group, to tell codes apart
	Uses      int        `json:"uses"`
	Used      int        `json:"used"`
	ExpiresAt time.Time  `json:"expiresAt"`
	CreatedAt time.Time  `json:"createdAt"`
	CreatedBy string     `json:"createdBy,omitempty"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
	// Lane is the lane the code's fans are in (admission.Lanes): "" the general lane.
	Lane string `json:"lane"`
}

// BypassUse is a redeemed use: the code after it and the admission it gave. Again: the fan already held this
// admission from the same code, and no use was spent.
type BypassUse struct {
	Code  BypassCode
	Grant admission.Grant
	Again bool
}

// BypassRecord keeps the codes (PostgreSQL; waitroom/postgres).
type BypassRecord interface {
	// AddBypassCodes records new codes of show, each with its hash (hashes[i] is codes[i]'s).
	AddBypassCodes(ctx context.Context, show string, codes []BypassCode, hashes [][]byte) error
	// BypassCodes lists show's codes, newest first.
	BypassCodes(ctx context.Context, show string) ([]BypassCode, error)
	// RevokeBypassCode revokes show's code with that id (again: no change) and returns it; ErrBypassUnknown if none.
	RevokeBypassCode(ctx context.Context, show, id string) (BypassCode, error)
	// RedeemBypass spends one use of the code hashed hash for g.UserID and records g, in one transaction; a fan
	// holding a live admission from this code gets it back (Again) instead. ErrBypassUnknown, ErrBypassRevoked,
	// ErrBypassExpired or ErrBypassUsedUp when the code cannot be used.
	RedeemBypass(ctx context.Context, show string, hash []byte, g admission.Grant) (BypassUse, error)
	// BypassLane is the lane of show's code hashed hash; ErrBypassUnknown if there is no such code.
	BypassLane(ctx context.Context, show string, hash []byte) (string, error)
}

// Bypass limits.
const (
	MaxBypassCount = 1000   // codes per request
	MaxBypassUses  = 100000 // uses per code
	MaxBypassLife  = 366 * 24 * time.Hour
	bypassLen      = 20 // characters of a code, without separators
)

// crockford is Crockford's base32 alphabet: no I, L, O or U, so a code read aloud or copied by hand survives.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// NewBypassCode returns a fresh code, grouped for reading ("ABCDE-FGHJK-MNPQR-STVWX").
func NewBypassCode() string {
	var b [bypassLen]byte
	_, _ = rand.Read(b[:])
	var sb strings.Builder
	for i, v := range b {
		if i > 0 && i%5 == 0 {
			sb.WriteByte('-')
		}
		sb.WriteByte(crockford[v&31]) // 256 is a multiple of 32: every character equally likely
	}
	return sb.String()
}

// NormalizeBypassCode reads a code as a fan typed it: case, spaces and dashes do not matter, and the letters
// Crockford's base32 leaves out read as the digits they look like. ok is false for anything that cannot be a code.
func NormalizeBypassCode(raw string) (string, bool) {
	if len(raw) > 64 {
		return "", false
	}
	var sb strings.Builder
	for _, r := range strings.ToUpper(raw) {
		switch {
		case r == '-' || r == ' ':
			continue
		case r == 'O':
			r = '0'
		case r == 'I' || r == 'L':
			r = '1'
		case !strings.ContainsRune(crockford, r):
			return "", false
		}
		sb.WriteRune(r)
	}
	if sb.Len() != bypassLen {
		return "", false
	}
	return sb.String(), true
}

// BypassHash is what the record keeps of a normalized code: bound to the show, so a code of another show is
// unknown here.
func BypassHash(show, code string) []byte {
	h := sha256.Sum256([]byte("flashseat bypass v1\x00" + show + "\x00" + code))
	return h[:]
}

// bypassID names a code in lists and revocations without giving it away.
func bypassID(hash []byte) string { return hex.EncodeToString(hash[:8]) }

// BypassRequest is an operator's order for codes.
type BypassRequest struct {
	Count     int
	Uses      int
	ExpiresAt time.Time
	By        string // the operator, as audited
	Lane      string // the lane the codes' fans are in: "" the general lane
}

// IssueBypassCodes makes and records codes for show; the answer is the only place their plain text appears.
func (s *Service) IssueBypassCodes(ctx context.Context, show string, r BypassRequest, now time.Time) ([]BypassCode, error) {
	switch {
	case !ValidID(show):
		return nil, fmt.Errorf("%w: show id", ErrInvalid)
	case r.Count < 1 || r.Count > MaxBypassCount:
		return nil, fmt.Errorf("%w: count must be in [1, %d]", ErrInvalid, MaxBypassCount)
	case r.Uses < 1 || r.Uses > MaxBypassUses:
		return nil, fmt.Errorf("%w: uses must be in [1, %d]", ErrInvalid, MaxBypassUses)
	case !r.ExpiresAt.After(now) || r.ExpiresAt.Sub(now) > MaxBypassLife:
		return nil, fmt.Errorf("%w: expiresAt must be in the future, within a year", ErrInvalid)
	}
	if r.Lane != "" {
		st, err := s.settings(ctx, show)
		if err != nil {
			return nil, err
		}
		if r.Lane != admission.GeneralLane && !st.Lanes.Has(r.Lane) {
			return nil, fmt.Errorf("%w: lane %q is not one of the show's lanes", ErrInvalid, r.Lane)
		}
	}
	codes := make([]BypassCode, r.Count)
	hashes := make([][]byte, r.Count)
	for i := range codes {
		code := NewBypassCode()
		norm, _ := NormalizeBypassCode(code)
		hashes[i] = BypassHash(show, norm)
		codes[i] = BypassCode{ID: bypassID(hashes[i]), Code: code, Hint: code[:5], Uses: r.Uses,
			ExpiresAt: r.ExpiresAt.UTC().Truncate(time.Millisecond), CreatedAt: now.UTC(), CreatedBy: r.By, Lane: r.Lane}
	}
	if err := s.record.AddBypassCodes(ctx, show, codes, hashes); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return codes, nil
}

// BypassCodes lists show's codes with their uses.
func (s *Service) BypassCodes(ctx context.Context, show string) ([]BypassCode, error) {
	if !ValidID(show) {
		return nil, fmt.Errorf("%w: show id", ErrInvalid)
	}
	cs, err := s.record.BypassCodes(ctx, show)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return cs, nil
}

// RevokeBypassCode revokes a code of show, named by its id or by the code itself. Admissions it already gave stay.
func (s *Service) RevokeBypassCode(ctx context.Context, show, idOrCode string) (BypassCode, error) {
	if !ValidID(show) {
		return BypassCode{}, fmt.Errorf("%w: show id", ErrInvalid)
	}
	id := strings.ToLower(idOrCode)
	if norm, ok := NormalizeBypassCode(idOrCode); ok {
		id = bypassID(BypassHash(show, norm))
	}
	c, err := s.record.RevokeBypassCode(ctx, show, id)
	if err != nil && !errors.Is(err, ErrBypassUnknown) {
		return c, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return c, err
}

// Bypass admits the fan in r at once on a valid bypass code, with no proof of work: their live admission if
// they hold one (no use spent), else a new one. A show whose queue is off, closed or sold out is answered as a
// join would be, spending nothing; before the opening or while admission is paused the code is refused
// (ErrBypassNotNow) and kept. used reports whether a use of the code was spent (for the audit).
func (s *Service) Bypass(ctx context.Context, r JoinRequest, code string) (p Place, used *BypassUse, err error) {
	if err := check(r.Show, r.User); err != nil {
		return Place{}, nil, err
	}
	norm, ok := NormalizeBypassCode(code)
	if !ok {
		return Place{}, nil, fmt.Errorf("%w: not a code's shape", ErrBypassUnknown)
	}
	e, err := s.bypassStep(ctx, r.Show, r.User, nil)
	if err != nil {
		return Place{}, nil, err
	}
	switch {
	case e.Status == Admitted, e.Status == Closed, e.Status == SoldOut:
		p, err := s.place(ctx, r.Show, e)
		return p, nil, err
	case e.Refused != "":
		return Place{}, nil, fmt.Errorf("%w (%s)", ErrBypassNotNow, e.Refused)
	}
	st, err := s.settings(ctx, r.Show)
	if err != nil {
		return Place{}, nil, err
	}
	lane, err := s.bypassLane(ctx, r.Show, r.User, BypassHash(r.Show, norm))
	if err != nil {
		return Place{}, nil, err
	}
	// A partitioned queue's admission names its line in its jti, for whoever releases it.
	prefix, err := s.store.JTIPrefix(ctx, r.Show, r.User, lane)
	if err != nil {
		return Place{}, nil, err
	}
	iat := time.Now().Truncate(time.Second) // a token's iat is whole seconds
	g := admission.Grant{ShowID: r.Show, JTI: prefix + "bp." + nonce(), UserID: r.User, IssuedAt: iat,
		ExpiresAt: iat.Add(time.Duration(st.TokenTTLSeconds) * time.Second)}
	use, err := s.record.RedeemBypass(ctx, r.Show, BypassHash(r.Show, norm), g)
	switch {
	case errors.Is(err, ErrBypassUnknown), errors.Is(err, ErrBypassExpired), errors.Is(err, ErrBypassUsedUp),
		errors.Is(err, ErrBypassRevoked):
		return Place{}, nil, err
	case err != nil:
		return Place{}, nil, fmt.Errorf("%w: redeem bypass code: %w", ErrUnavailable, err)
	}
	if lane != "" {
		// Only now, with the code's use spent: a code that cannot admit (expired, used up) moves nobody.
		if err := s.store.SetLane(ctx, r.Show, r.User, lane); err != nil {
			return Place{}, nil, err // the admission is recorded: presenting the code again gets it (Again)
		}
	}
	grant := Grant{UserID: r.User, JTI: use.Grant.JTI, IssuedAt: use.Grant.IssuedAt, ExpiresAt: use.Grant.ExpiresAt}
	if err := s.sign(&grant, r.Show); err != nil {
		return Place{}, nil, err
	}
	e, err = s.bypassStep(ctx, r.Show, r.User, &grant)
	if err != nil {
		// The admission is recorded: the fan presenting the code again gets it (Again), spending nothing.
		return Place{}, nil, err
	}
	if e.Grant != nil && e.Grant.JTI != grant.JTI && !use.Again {
		// The fan was admitted otherwise meanwhile (their turn came, or a second tab's code): keep that one and
		// end the one just recorded, so it holds no slot.
		if err := s.queues.Release(ctx, use.Grant); err != nil {
			s.logFailure("release bypass admission", r.Show, err)
		}
	}
	s.Hub.Touch(r.Show)
	p, err = s.place(ctx, r.Show, e)
	if err != nil || use.Again {
		return p, nil, err
	}
	return p, &use, nil
}

// bypassLane is the lane the code hashed hash admits user in: the code's, so that the admission is made on the
// lane's line and every later look (status, streams, release) finds it there once the fan is moved to it
// (SetLane; waitroom/redis lanes.go). "" keeps the fan's own lane: a code naming none, or a fan holding a ticket,
// whom the code admits from their line (moving them would leave the ticket on a line that would admit them again).
func (s *Service) bypassLane(ctx context.Context, show, user string, hash []byte) (string, error) {
	lane, err := s.record.BypassLane(ctx, show, hash)
	switch {
	case errors.Is(err, ErrBypassUnknown):
		return "", err
	case err != nil:
		return "", fmt.Errorf("%w: bypass code's lane: %w", ErrUnavailable, err)
	case lane == "":
		return "", nil
	}
	seqs, err := s.store.Seqs(ctx, show, []string{user})
	if err != nil || seqs[user] > 0 {
		return "", err
	}
	return lane, nil
}

// bypassStep runs the store's bypass step (g nil: only look), restoring what the store lost, as a join does.
func (s *Service) bypassStep(ctx context.Context, show, user string, g *Grant) (Entry, error) {
	return s.restoring(ctx, show, func() (Entry, error) { return s.store.Bypass(ctx, show, user, g) })
}
