package waitroom

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/flashseat/flashseat/shared/admission"
)

// Durability: how a queue survives its store (Redis) losing its data.
//
// The operator's settings and the admissions are shared/admission's record; the seed, the draw, the cursor and
// the ticket ceiling are this package's Record. The store keeps none of them only in memory: the ceiling is
// reserved in the Record before a ticket under it is handed out, the cursor is recorded at most a second behind,
// admissions are recorded in the tick that makes them. A store that finds a piece missing says so (ErrNoSettings,
// ErrNoState, *SeqsError) rather than guessing, and recover puts it back.

// seqBlock is how many tickets one reservation covers: one PostgreSQL write per seqBlock joins.
const seqBlock = 2000

// cursorEvery is how often a moving cursor is recorded, per show and replica.
const cursorEvery = time.Second

// errQueueOff: the store had no settings and the record says the queue is off (or was never switched on).
var errQueueOff = errors.New("waitroom: queue off on record")

// recover handles a store's request to restore or reserve: nil means retry. Errors wrap ErrUnavailable when the
// record cannot be read, so callers answer 503 and the fan retries, keeping the place.
func (s *Service) recover(ctx context.Context, show string, err error) error {
	var seqs *SeqsError
	switch {
	case errors.Is(err, ErrNoSettings):
		st, err := s.queues.Settings(ctx, show) // restores the shared state when the record has the show
		if err != nil {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		if !st.Enabled {
			return errQueueOff
		}
		return nil
	case errors.Is(err, ErrNoState):
		return s.restore(ctx, show)
	case errors.As(err, &seqs):
		return s.reserve(ctx, show, seqs.LastSeq)
	}
	return err
}

// restore rebuilds a show's queue state in the store from the records (once at a time per show here; the store's
// script makes concurrent restores on several replicas harmless).
func (s *Service) restore(ctx context.Context, show string) error {
	_, err, _ := s.flights.Do("restore "+show, func() (any, error) {
		d, err := s.record.Queue(ctx, show)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		live, _, err := s.queues.Record().Grants(ctx, show, time.Now())
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		for _, g := range live {
			d.Grants = append(d.Grants, Grant{UserID: g.UserID, JTI: g.JTI, IssuedAt: g.IssuedAt, ExpiresAt: g.ExpiresAt})
		}
		if err := s.store.Restore(ctx, show, d); err != nil {
			return nil, err
		}
		// Fans streaming from this replica hold their tickets in its memory, which is as good a proof as a
		// receipt (the store gave them): put them back now rather than when each reconnects.
		for u, seq := range s.Hub.Places(show) {
			if _, err := s.store.Join(ctx, show, u, seq); err != nil {
				var seqs *SeqsError
				if !errors.As(err, &seqs) { // a fan without a ticket to restore waits for the next tick's rejoin
					return nil, err
				}
			}
		}
		level := slog.LevelInfo
		if d.Ceiling == 0 { // a queue's first use, not a recovery
			level = slog.LevelDebug
		}
		s.log.Log(ctx, level, "waitroom: queue state restored from the record", "show", show, "cursor", d.Cursor,
			"ceiling", d.Ceiling, "admitted", len(d.Grants))
		return nil, nil
	})
	return err
}

// reserve raises a show's ticket ceiling above lastSeq, in the record first.
func (s *Service) reserve(ctx context.Context, show string, lastSeq int64) error {
	_, err, _ := s.flights.Do("reserve "+show, func() (any, error) {
		c, err := s.record.Reserve(ctx, show, lastSeq+seqBlock, 0)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		err = s.store.SetCeiling(ctx, show, c)
		if errors.Is(err, ErrNoState) {
			err = s.restore(ctx, show)
		}
		return nil, err
	})
	return err
}

// maxUnsaved bounds the admissions kept in memory while the record is unreachable.
const maxUnsaved = 100000

// recordGrants records a tick's admissions, with any earlier ones the record refused. Admission does not wait
// for PostgreSQL: an admission not yet recorded is lost only if Redis is lost too before the record is back.
func (s *Service) recordGrants(ctx context.Context, show string, grants []Grant) {
	s.mu.Lock()
	for _, g := range grants {
		if len(s.unsaved) < maxUnsaved {
			s.unsaved = append(s.unsaved, admission.Grant{ShowID: show, JTI: g.JTI, UserID: g.UserID,
				IssuedAt: g.IssuedAt, ExpiresAt: g.ExpiresAt})
		}
	}
	batch := s.unsaved
	s.unsaved = nil
	s.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	if err := s.queues.AddGrants(ctx, batch); err != nil {
		s.logFailure("record admissions", show, err)
		s.mu.Lock()
		s.unsaved = append(batch, s.unsaved...)
		if len(s.unsaved) > maxUnsaved {
			s.unsaved = s.unsaved[len(s.unsaved)-maxUnsaved:]
		}
		s.mu.Unlock()
	}
}

// recordCursor records a show's cursor when it moved, at most every cursorEvery per replica.
func (s *Service) recordCursor(ctx context.Context, show string, snap Snapshot) {
	if snap.Phase == PhaseClosed || snap.Cursor <= 0 {
		return
	}
	now := time.Now()
	s.mu.Lock()
	last, _ := s.cursors.Get(show)
	due := snap.Cursor > last.cursor && now.Sub(last.at) >= cursorEvery
	if due {
		s.cursors.Add(show, savedCursor{cursor: snap.Cursor, at: now})
	}
	s.mu.Unlock()
	if !due {
		return
	}
	if err := s.record.SaveCursor(ctx, show, snap.Cursor); err != nil {
		s.logFailure("record cursor", show, err)
		s.mu.Lock()
		s.cursors.Add(show, last) // try again next tick
		s.mu.Unlock()
	}
}

// presentedReceipt is what a fan's receipt proves: seq, if ok.
type presentedReceipt struct {
	seq int64
	ok  bool
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
	return presentedReceipt{seq: r.Seq, ok: true}
}

// receipt returns the receipt for a waiting fan's place: the one presented when it proves this very place (no
// signing on every poll), else a new one. Admitted, closed and sold-out fans get none.
func (s *Service) receipt(show, user string, p Place, raw string, presented presentedReceipt) string {
	if p.Status != Waiting {
		return ""
	}
	if presented.ok && presented.seq == p.Seq {
		return raw
	}
	signed, err := s.issuer.IssueReceipt(user, show, p.Seq, time.Now())
	if err != nil {
		s.logFailure("sign receipt", show, err)
		return ""
	}
	return signed
}

// Receipt returns the place receipt for p, reusing presented (the fan's current one) when it proves the same
// place: for status answers and streams, which refresh the fan's receipt once the draw gave them a ticket.
func (s *Service) Receipt(show, user string, p Place, presented string) string {
	return s.receipt(show, user, p, presented, s.verifyReceipt(show, user, presented))
}
