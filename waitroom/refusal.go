package waitroom

import "net/http"

// The refusals' one table: every reason a join is refused a new place (or a guest session is refused), with all
// that follows from it. The verdicts the guard and the store decide are its names; the waiting room's problem
// rows (waitroom/http), the edge's metric labels (waitroom_join_refusals_total{reason}), the flags join.lua reads,
// the queue page's behaviour and the console's words derive from its rows. Adding a reason is a row here, the
// code that decides it, the page's words (waitroom/http/page/refusals.json) and openapi.yaml; docs/BOTS.md says
// so, and tests keep each of those agreeing with this table.

// Reasons a new place is refused: the one spelling of each, which is also the problem type's slug where the
// reason has a type of its own.
const (
	ReasonProofRequired      = "proof-required"
	ReasonProofInvalid       = "proof-invalid" // expired or malformed: an honest client's stale proof
	ReasonProofForged        = "proof-forged"  // wrong number or signature, another show's or identity's
	ReasonProofReplayed      = "proof-replayed"
	ReasonHumanCheckRequired = "human-check-required"
	ReasonHumanCheckFailed   = "human-check-failed"
	ReasonAccountRequired    = "account-required"
	ReasonPrefixBlocked      = "prefix-blocked"
	ReasonPrefixLimited      = "prefix-limited"
	ReasonBrowserInQueue     = "browser-in-queue" // this browser holds a place under another identity
	// The access setting's (registration.go): the show lets in only registered, or only invited, fans.
	ReasonRegistrationRequired = "registration-required"
	ReasonInvitationRequired   = "invitation-required"
)

// Reason is one row of the table.
type Reason struct {
	Name    string // the refusal body's reason, the metric's label, the page's words' key
	Err     error  // the error a *Refusal of this reason wraps
	Status  int    // the HTTP status of its problem
	Problem string // its problem type's slug
	Detail  string // the problem's detail, for an API client
	// Suspect: a client refused for it is a suspected bot, refused or shadowed as the show says (join.lua).
	Suspect bool
	// Failed: a proof came back and did not hold; counted as a failed challenge.
	Failed bool
	// Fresh: a fresh challenge (and the human check's widget) helps; the refusal carries them, and the page
	// earns the place again at once.
	Fresh bool
	// HumanKept: decided before the human check read a token sent with the join, so that token is still good.
	HumanKept bool
	// Register: the access setting's refusals; registering for the show (or waiting for a wave) is what helps, and
	// the page offers it.
	Register bool
	// RetryAfter is the seconds a client should wait before trying again (Retry-After); 0: no advice.
	RetryAfter int
	// Means is what a count of them says of the clients refused, in the operator's words (the console).
	Means string
}

// Reasons is the table, in the order the guard decides them.
var Reasons = []Reason{
	{Name: ReasonRegistrationRequired, Err: ErrRegistrationRequired, Status: http.StatusForbidden,
		Problem: ReasonRegistrationRequired, HumanKept: true, Register: true,
		Detail: "This sale is for fans who registered for it beforehand; this identity did not.",
		Means:  "had not registered for a registered-fans sale"},
	{Name: ReasonInvitationRequired, Err: ErrInvitationRequired, Status: http.StatusForbidden,
		Problem: ReasonInvitationRequired, HumanKept: true, Register: true,
		Detail: "This sale is for invited fans; this identity has not been invited (yet: later waves may invite it).",
		Means:  "had not been invited to an invited-fans sale"},
	{Name: ReasonAccountRequired, Err: ErrAccountRequired, Status: http.StatusForbidden, Problem: ReasonAccountRequired,
		Detail: "This sale is for signed-in accounts only: sign in and join again.", HumanKept: true,
		Means: "were guests at an accounts-only sale"},
	{Name: ReasonPrefixBlocked, Err: ErrPrefixBlocked, Status: http.StatusForbidden, Problem: ReasonPrefixBlocked,
		Detail: "Your network may not join this queue.", Suspect: true, HumanKept: true,
		Means: "came from a blocked prefix (suspects)"},
	{Name: ReasonProofRequired, Err: ErrProofRequired, Status: http.StatusForbidden, Problem: ReasonProofRequired,
		Detail: "Solve the challenge in this answer and join again with its solution as \"proof\".", Fresh: true,
		HumanKept: true, Means: "came without a proof of work"},
	{Name: ReasonProofInvalid, Err: ErrProofInvalid, Status: http.StatusUnprocessableEntity, Problem: ReasonProofInvalid,
		Detail: "The proof of work is not valid (expired, malformed, or not this challenge's); solve the fresh challenge in this answer.",
		Failed: true, Fresh: true, HumanKept: true, Means: "brought an expired or malformed proof"},
	// A forger is answered as an honest client with a stale proof is (the same error and problem): it learns
	// nothing from the answer.
	{Name: ReasonProofForged, Err: ErrProofInvalid, Status: http.StatusUnprocessableEntity, Problem: ReasonProofInvalid,
		Detail:  "The proof of work is not valid (expired, malformed, or not this challenge's); solve the fresh challenge in this answer.",
		Suspect: true, Failed: true, HumanKept: true, Means: "brought a forged proof (suspects)"},
	{Name: ReasonHumanCheckRequired, Err: ErrHumanRequired, Status: http.StatusForbidden, Problem: ReasonHumanCheckRequired,
		Detail: "Complete the human check and join again with its token as \"humanToken\".", Fresh: true,
		Means: "came without the human check"},
	{Name: ReasonHumanCheckFailed, Err: ErrHumanFailed, Status: http.StatusForbidden, Problem: ReasonHumanCheckFailed,
		Detail: "The human check did not pass; try it again.", Fresh: true, Means: "failed the human check"},
	// Found by the store itself (StoreReasons).
	{Name: ReasonPrefixLimited, Err: ErrPrefixLimited, Status: http.StatusTooManyRequests, Problem: ReasonPrefixLimited,
		Detail: "Too many places have been taken from your network for this show.", Suspect: true,
		RetryAfter: 60, // the prefix's count decays over minutes: sooner is no use
		Means:      "came from a prefix over its places (suspects)"},
	{Name: ReasonBrowserInQueue, Err: ErrBrowserInQueue, Status: http.StatusConflict, Problem: ReasonBrowserInQueue,
		Detail: "This browser already holds a place in this queue under another identity.",
		Means:  "came from a browser already holding a place"},
	// A spent proof is most often an honest page's join sent twice: a fresh challenge helps it.
	{Name: ReasonProofReplayed, Err: ErrProofReplayed, Status: http.StatusConflict, Problem: ReasonProofReplayed,
		Detail: "This proof of work was already used; each challenge buys one place.", Suspect: true, Failed: true,
		Fresh: true, Means: "brought a proof already spent (suspects)"},
}

// StoreReasons are the reasons the store finds itself, in join.lua's order of arguments: a prefix over its
// places (a suspect), a browser holding another identity's place, a proof already spent (a suspect, a failed
// proof). join.lua gives them those flags; TestStoreReasons keeps the table's rows agreeing.
var StoreReasons = []string{ReasonPrefixLimited, ReasonBrowserInQueue, ReasonProofReplayed}

// reasons indexes the table by name.
var reasons = func() map[string]Reason {
	m := make(map[string]Reason, len(Reasons))
	for _, r := range Reasons {
		m[r.Name] = r
	}
	return m
}()

// ReasonOf returns name's row; false for a name the table lacks (a newer waiting room's).
func ReasonOf(name string) (Reason, bool) {
	r, ok := reasons[name]
	return r, ok
}

// Flags is name's row as join.lua reads a verdict's: "s" a suspect, "f" a failed proof, both or neither.
func Flags(name string) string {
	r := reasons[name]
	switch {
	case r.Suspect && r.Failed:
		return "sf"
	case r.Suspect:
		return "s"
	case r.Failed:
		return "f"
	}
	return ""
}
