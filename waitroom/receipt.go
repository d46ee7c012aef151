package waitroom

import "time"

// presentedReceipt is what a fan's receipt proves: seq, if ok. renew: it was made under a previous key or in the
// Ed25519 format, and the fan gets a fresh one even for the same place.
type presentedReceipt struct {
	seq   int64
	ok    bool
	renew bool
}

// verifyReceipt checks a presented receipt. An invalid, expired or foreign one proves nothing and is ignored:
// the fan simply joins as anyone would.
func (s *Service) verifyReceipt(show, user, raw string) presentedReceipt {
	if raw == "" {
		return presentedReceipt{}
	}
	r, err := s.receipts.Verify(raw, show, user)
	if err != nil {
		return presentedReceipt{}
	}
	return presentedReceipt{seq: r.Seq, ok: true, renew: r.Renew}
}

// receipt returns the receipt for a waiting fan's place: the one presented when it proves this very place under
// the current key (no new receipt on every poll), else a new one. Admitted, closed and sold-out fans get none.
func (s *Service) receipt(show, user string, p Place, raw string, presented presentedReceipt) string {
	if p.Status != Waiting {
		return ""
	}
	seq := p.Seq
	if p.Shadow {
		seq = 0 // a receipt like any other, that proves no ticket: a shadow place must never become a real one
	}
	if presented.ok && presented.seq == seq && !presented.renew {
		return raw
	}
	made, err := s.issuer.IssueReceipt(user, show, seq, time.Now())
	if err != nil {
		s.logFailure("make receipt", show, err)
		return ""
	}
	return made
}

// Receipt returns the place receipt for p, reusing presented (the fan's current one) when it proves the same
// place: for status answers and streams, which refresh the fan's receipt once the draw gave them a ticket.
func (s *Service) Receipt(show, user string, p Place, presented string) string {
	return s.receipt(show, user, p, presented, s.verifyReceipt(show, user, presented))
}
