package waitroom

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/pow"
)

// The guard: what a join must bring to take a new place in a show whose bot protection is on (admission's
// BotProtection). A fan who already has a place keeps it without bringing anything; only a new place is guarded.
//
//  1. A proof of work (shared/pow, the ALTCHA protocol) bound to the show and to the identity, spent once. Its
//     difficulty rises steeply with the recent challenges of the client's address prefix (Challenge), so one
//     address pays exponentially more for each further place while one fan pays a fraction of a second.
//  2. The deployment's human check (Turnstile, hCaptcha or reCAPTCHA), when the show asks for one.
//  3. For an accounts-only show, a user token of the external identity provider.
//  4. At most PrefixPlaces places per prefix, no place for a blocked prefix, and one place per browser session.
//
// A client that forges a proof, replays one, or comes from a prefix over its limit or blocked is a suspect: it is
// refused, or, if the operator chose it, given a shadow place (an infinite queue that never admits it). Either way
// it never takes a real place. The Lua side of this is join.lua's guard().

// VerdictOK is the guard's verdict on a new place it lets through; any other verdict is a refusal's reason
// (refusal.go's table).
const VerdictOK = "ok"

// Errors of a guarded join; each comes wrapped in a *Refusal that carries what the client needs to try again.
var (
	ErrProofRequired    = errors.New("waitroom: a proof of work is required to join this queue")
	ErrProofInvalid     = errors.New("waitroom: the proof of work is not valid")
	ErrProofReplayed    = errors.New("waitroom: the proof of work was already used")
	ErrHumanRequired    = errors.New("waitroom: the human check is required to join this queue")
	ErrHumanFailed      = errors.New("waitroom: the human check failed")
	ErrHumanUnavailable = fmt.Errorf("waitroom: the human check cannot be reached: %w", ErrUnavailable)
	ErrAccountRequired  = errors.New("waitroom: this sale is for signed-in accounts only")
	ErrPrefixLimited    = errors.New("waitroom: too many places from this network")
	ErrPrefixBlocked    = errors.New("waitroom: this network may not join this queue")
	ErrBrowserInQueue   = errors.New("waitroom: this browser already holds a place under another identity")
	ErrNoProofNeeded    = errors.New("waitroom: this queue asks no proof of work")
	// The access setting's refusals (registration.go).
	ErrRegistrationRequired = errors.New("waitroom: this sale is for registered fans only")
	ErrInvitationRequired   = errors.New("waitroom: this sale is for invited fans only")
)

// Refusal is a join refused a new place. Reason is the verdict (a name of the table, refusal.go); Challenge is a fresh challenge and Human the
// human check's widget when the client can earn the place with them.
type Refusal struct {
	Err       error
	Reason    string
	Challenge *pow.Challenge
	Human     any
}

func (r *Refusal) Error() string { return r.Err.Error() + " (" + r.Reason + ")" }
func (r *Refusal) Unwrap() error { return r.Err }

// Client is who asks for a place, as the edge sees them.
type Client struct {
	Prefix   string // admission.Prefix of the client's address
	RemoteIP string // the address itself, for the human check
	Browser  string // the browser session's id; empty for API clients
	Account  bool   // the user token is the external identity provider's, not a guest's
}

// JoinRequest is a fan's join through the guard.
type JoinRequest struct {
	Show, User string
	Receipt    string // the fan's place receipt, if any
	Client     Client
	Proof      string // a solved challenge (pow's payload)
	Human      string // the human check's response token
}

// Ask is what a join brings to the store besides the fan: the guard's verdict on a new place and what to count it
// under. The zero Ask is the waiting room's own join of a fan already live (rejoins, restores): no guard.
type Ask struct {
	Verdict      string        // VerdictOK, or why a new place is refused
	Prefix       string        // the client's prefix; "" counts nothing
	PrefixPlaces int           // places the prefix may take
	Shadow       bool          // suspects get a shadow place rather than a refusal
	Spend        string        // the proof's id, spent once; "" none
	SpendFor     time.Duration // how long the spent proof must be remembered (until it expires)
	SolveTime    time.Duration // how long the proof took, issue to join; negative: unknown
	Browser      string
	TurnHold     time.Duration
	// Returning is what the admission record says of a fan whose receipted ticket the cursor had passed when
	// Redis lost the queue (Entry.Passed): "" not asked yet, ReturningBack never admitted (skipped while away:
	// back at the head of the line), ReturningServed admitted (a new place only).
	Returning string
}

// What the admission record says of a returning fan (Ask.Returning).
const (
	ReturningBack   = "back"
	ReturningServed = "served"
)

// trusted is the Ask of the waiting room's own joins.
func trusted() Ask {
	return Ask{Verdict: VerdictOK, PrefixPlaces: math.MaxInt32, SolveTime: -1, TurnHold: 10 * time.Minute}
}

// HumanCheck verifies a human-check response token (waitroom/siteverify, adapted by the wiring). ok false means
// the provider rejected it; an error means it could not be asked.
type HumanCheck interface {
	Verify(ctx context.Context, response, remoteIP string) (ok bool, err error)
}

// SettingsReader reads a show's settings, as the edge's gate does (cached for a second).
type SettingsReader interface {
	Settings(ctx context.Context, show string) (admission.Settings, error)
}

// GuardStore keeps the guard's counts beside the queue.
type GuardStore interface {
	// Pressure counts one more challenge for prefix in show, decaying the count with halfLife, and returns it
	// (this one included) with the show's new places a minute.
	Pressure(ctx context.Context, show, prefix string, halfLife time.Duration) (pressure, placesPerMinute float64, err error)
	// BotFigures reads the show's counts.
	BotFigures(ctx context.Context, show string) (BotFigures, error)
}

// GuardEvent is one thing the guard did, for metrics: Kind is "issued" (a challenge, Difficulty its maxnumber),
// "solved" (a proof took a place, SolveTime from issue to join), "refused" (Reason the verdict) or "shadowed" (a
// suspect given a shadow place).
type GuardEvent struct {
	Show       string
	Kind       string
	Reason     string
	Difficulty int64
	SolveTime  time.Duration
}

func (s *Service) observe(e GuardEvent) {
	if s.opt.OnGuard != nil {
		s.opt.OnGuard(e)
	}
}

// BotFigures are what operators see of a show's bot protection.
type BotFigures struct {
	Issued        int64            `json:"challengesIssued"`
	Solved        int64            `json:"challengesSolved"`
	Failed        int64            `json:"challengesFailed"`
	MedianSolveMs int64            `json:"medianSolveMs"`
	Shadowed      int64            `json:"shadowed"`
	Refused       map[string]int64 `json:"refusedByReason"`
	TopPrefixes   []PrefixPlaces   `json:"topPrefixes"`
	// Solves are the recent solve times in ms (newest first), for the median.
	Solves []int64 `json:"-"`
}

// PrefixPlaces is one prefix's count of places taken.
type PrefixPlaces struct {
	Prefix string `json:"prefix"`
	Places int64  `json:"places"`
}

// Median returns the median of ms, 0 for none.
func Median(ms []int64) int64 {
	if len(ms) == 0 {
		return 0
	}
	s := append([]int64(nil), ms...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// Difficulty is the maxnumber of a challenge for a prefix with pressure recent challenges (this one included) in a
// show taking placesPerMinute new places a minute.
func Difficulty(b admission.BotProtection, pressure, placesPerMinute float64) int64 {
	over := math.Max(0, pressure-1-b.FreeChallenges)
	d := float64(b.BaseDifficulty) * math.Exp2(over/b.DoublingChallenges)
	if b.LoadJoinsPerMinute > 0 {
		switch load := placesPerMinute / float64(b.LoadJoinsPerMinute); {
		case load >= 4:
			d *= 4
		case load >= 1:
			d *= 2
		}
	}
	return int64(math.Min(d, float64(b.MaxDifficulty)))
}

// ChallengeTTL is how long a challenge may be solved and spent: well past the worst solve at the highest
// difficulty on a phone, so a fan is never sent back to start again for being slow.
const ChallengeTTL = 5 * time.Minute

// Earn is what a client needs to earn a new place: a proof-of-work challenge, and the human check's widget when
// the show asks for one.
type Earn struct {
	Challenge *pow.Challenge
	Human     any
}

// Challenge issues what user needs to join show: a proof-of-work challenge at the difficulty the client's prefix
// has earned, and the human check's widget if the show asks for it. ErrNoProofNeeded when the show asks neither
// (queue or bot protection off).
func (s *Service) Challenge(ctx context.Context, show, user string, c Client) (Earn, error) {
	if err := check(show, user); err != nil {
		return Earn{}, err
	}
	st, err := s.settings(ctx, show)
	if err != nil {
		return Earn{}, err
	}
	if !st.Enabled || !st.Bot.Enabled {
		return Earn{}, ErrNoProofNeeded
	}
	var e Earn
	if s.opt.PoW != nil {
		ch, err := s.challenge(ctx, show, user, c, st.Bot)
		if err != nil {
			return Earn{}, err
		}
		e.Challenge = &ch
	}
	if st.Bot.HumanCheck && s.opt.Human != nil {
		e.Human = s.opt.HumanWidget
	}
	if e.Challenge == nil && e.Human == nil {
		return Earn{}, ErrNoProofNeeded
	}
	return e, nil
}

func (s *Service) challenge(ctx context.Context, show, user string, c Client, b admission.BotProtection) (pow.Challenge, error) {
	p, load, err := s.guard.Pressure(ctx, show, c.Prefix, time.Duration(b.HalfLifeSeconds)*time.Second)
	if err != nil {
		return pow.Challenge{}, err
	}
	d := Difficulty(b, p, load)
	s.observe(GuardEvent{Show: show, Kind: "issued", Difficulty: d})
	return s.opt.PoW.Issue(pow.Terms{Scope: pow.ShowScope(show), Identity: user, MaxNumber: d, TTL: ChallengeTTL},
		time.Now())
}

// BotFigures returns a show's bot-protection figures.
func (s *Service) BotFigures(ctx context.Context, show string) (BotFigures, error) {
	if !ValidID(show) {
		return BotFigures{}, fmt.Errorf("%w: show id", ErrInvalid)
	}
	f, err := s.guard.BotFigures(ctx, show)
	if err != nil {
		return f, err
	}
	f.MedianSolveMs = Median(f.Solves)
	return f, nil
}

// settings reads a show's settings through the configured reader (the gate's second-long cache), else the keeper.
func (s *Service) settings(ctx context.Context, show string) (admission.Settings, error) {
	if s.opt.Settings != nil {
		return s.opt.Settings.Settings(ctx, show)
	}
	return s.queues.Settings(ctx, show)
}

// who judges a client by who it is, before any proof: an account the show asks for, a prefix it blocked. The
// store-down trickle (trickle.go), which can check nothing else, refuses by it too.
func who(b admission.BotProtection, c Client) string {
	switch {
	case b.AccountsOnly && !c.Account:
		return ReasonAccountRequired
	case b.IsBlocked(c.Prefix):
		return ReasonPrefixBlocked
	}
	return VerdictOK
}

// ask judges a join's bid for a new place under st.
func (s *Service) ask(ctx context.Context, st admission.Settings, r JoinRequest) (Ask, error) {
	a := Ask{Verdict: VerdictOK, Prefix: r.Client.Prefix, PrefixPlaces: math.MaxInt32, Browser: r.Client.Browser,
		SolveTime: -1, TurnHold: time.Duration(st.TurnHoldSeconds) * time.Second}
	if a.Prefix == "" {
		a.Prefix = "unknown" // never "": that is the waiting room's own, uncounted join
	}
	if !st.Enabled {
		return a, nil
	}
	// Who the access setting lets in comes first: a fan it refuses would solve a proof for nothing.
	v, err := s.admits(ctx, st, r.Show, r.User)
	if err != nil {
		return a, err
	}
	if a.Verdict = v; v != VerdictOK {
		return a, nil
	}
	return a, s.earn(ctx, st, r, &a)
}

// earn is the bot protection's part of a's verdict: accounts-only and blocked prefixes, the proof of work, the
// human check. A registration (registration.go) meets it as a join does.
func (s *Service) earn(ctx context.Context, st admission.Settings, r JoinRequest, a *Ask) error {
	b := st.Bot
	if !st.Enabled || !b.Enabled {
		return nil
	}
	a.PrefixPlaces, a.Shadow = b.PrefixPlaces, b.Suspects == admission.SuspectsShadow
	if a.Verdict = who(b, r.Client); a.Verdict != VerdictOK {
		return nil
	}
	if s.opt.PoW != nil {
		if r.Proof == "" {
			a.Verdict = proofVerdict("", nil)
			return nil
		}
		now := time.Now()
		sol, err := s.opt.PoW.Verify(r.Proof, pow.ShowScope(r.Show), r.User, now)
		if err != nil {
			a.Verdict = proofVerdict(r.Proof, err)
			return nil
		}
		a.Spend, a.SpendFor, a.SolveTime = sol.ID, sol.ExpiresAt.Sub(now)+time.Second, now.Sub(sol.IssuedAt)
	}
	if b.HumanCheck && s.opt.Human != nil {
		if r.Human == "" {
			a.Verdict = ReasonHumanCheckRequired
			return nil
		}
		ok, err := s.opt.Human.Verify(ctx, r.Human, r.Client.RemoteIP)
		switch {
		case err != nil:
			return fmt.Errorf("%w: %v", ErrHumanUnavailable, err)
		case !ok:
			a.Verdict = ReasonHumanCheckFailed
		}
	}
	return nil
}

// Enter is a fan's join through the guard: their place if they have one, else a new place if the guard lets
// them take one, else a *Refusal saying why and carrying what they need to try again.
func (s *Service) Enter(ctx context.Context, r JoinRequest) (Place, error) {
	if err := check(r.Show, r.User); err != nil {
		return Place{}, err
	}
	if s.trickle.knownDown(r.Show) {
		return s.whenStoreDown(ctx, r, errKnownDown)
	}
	st, err := s.settings(ctx, r.Show)
	if err != nil {
		return s.whenStoreDown(ctx, r, err)
	}
	a, err := s.ask(ctx, st, r)
	if err != nil {
		return Place{}, err
	}
	p, err := s.enter(ctx, r.Show, r.User, r.Receipt, a)
	var ref *Refusal
	switch {
	case errors.As(err, &ref):
		s.observe(GuardEvent{Show: r.Show, Kind: "refused", Reason: ref.Reason})
		s.journalRefusal(r.Show, ref.Reason)
		if eerr := s.equip(ctx, ref, st, r); eerr != nil {
			return s.whenStoreDown(ctx, r, eerr)
		}
	case err != nil:
		return s.whenStoreDown(ctx, r, err)
	case err == nil && p.Shadow:
		s.observe(GuardEvent{Show: r.Show, Kind: "shadowed"})
	case err == nil && a.Spend != "":
		s.observe(GuardEvent{Show: r.Show, Kind: "solved", SolveTime: a.SolveTime})
	}
	return p, err
}

// equip gives a refusal what the client needs to try again: a fresh challenge where a proof would help, and
// the human check's widget where it is asked for. When the challenge cannot be made (its difficulty is read from
// the store, which may be failing over) the join fails as unavailable: a refusal that asks for a proof and
// carries no challenge would leave the fan nothing to do but give up, where a 503 tells them to retry.
func (s *Service) equip(ctx context.Context, ref *Refusal, st admission.Settings, r JoinRequest) error {
	if row, _ := ReasonOf(ref.Reason); !row.Fresh {
		return nil
	}
	if s.opt.PoW != nil && st.Bot.Enabled {
		c, err := s.challenge(ctx, r.Show, r.User, r.Client, st.Bot)
		if err != nil {
			return fmt.Errorf("%w: a challenge for the refused join: %w", ErrUnavailable, err)
		}
		ref.Challenge = &c
	}
	if st.Bot.HumanCheck && s.opt.Human != nil {
		ref.Human = s.opt.HumanWidget
	}
	return nil
}

// proofVerdict is the verdict on a proof pow would not verify (the joins' and the guest sessions'): none at all is
// required; an expired or malformed one is an honest client's stale proof; any other (a wrong number or
// signature, another show's or identity's) is forged.
func proofVerdict(proof string, err error) string {
	switch {
	case proof == "":
		return ReasonProofRequired
	case errors.Is(err, pow.ErrExpired) || errors.Is(err, pow.ErrMalformed):
		return ReasonProofInvalid
	}
	return ReasonProofForged
}

// refusal is the error of a join refused for reason, the store's verdict or the guard's.
func refusal(reason string) *Refusal {
	row, ok := ReasonOf(reason)
	if !ok {
		return &Refusal{Err: fmt.Errorf("waitroom: join refused: %s", reason), Reason: reason}
	}
	return &Refusal{Err: row.Err, Reason: reason}
}
