package waitroom

import "time"

// Journal is the durable record of a queue's traffic that the after-sale report is built from (booking's
// GET /admin/v1/shows/{id}/report): each fan's first place, and the joins refused a new place by reason. Admissions
// are already on record (shared/admission's grants). waitroom/postgres implements it with batched writes, so a
// join never waits for PostgreSQL: what it costs a fan is one row, written within a flush interval.
type Journal interface {
	// Joined records that user holds a place in show's queue since at (shadow: a suspect's shadow place, guard.go);
	// only the first is kept.
	Joined(show, user string, at time.Time, shadow bool)
	// Refused records a join refused a new place in show for reason (a name of the refusal table, refusal.go).
	Refused(show, reason string, at time.Time)
}

// journalJoin records a place just given or found: a fan in line (a shadow place too) or admitted at once, not an
// answer that the queue is closed or sold out.
func (s *Service) journalJoin(show, user string, p Place) {
	if j := s.opt.Journal; j != nil && (p.Status == Waiting || p.Status == Admitted) {
		j.Joined(show, user, time.Now(), p.Shadow)
	}
}

// journalRefusal records a refused join.
func (s *Service) journalRefusal(show, reason string) {
	if j := s.opt.Journal; j != nil {
		j.Refused(show, reason, time.Now())
	}
}
