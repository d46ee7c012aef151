package waitroom

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Durability: how a queue survives its store (Redis) losing its data. This file is the recovery: recover, restore
// and reserve, and the retry every store step goes through (recovering); the admission tick's pipeline that
// issues what is recovered here is admit.go's.
//
// The operator's settings and the admissions are shared/admission's record; the seed, the draw, the cursor and
// the ticket ceiling are this package's Record. The store keeps none of them only in memory: the ceiling is
// reserved in the Record before a ticket under it is handed out, the cursor is recorded at most a second behind,
// admissions are recorded in the tick that makes them. A store that finds a piece missing says so (ErrNoSettings,
// ErrNoState, *SeqsError) rather than guessing, and recover puts it back.
//
// Admitted stays admitted. The script admits in Redis; the record is written after it, so there is always a
// moment when an admission exists only in Redis. Rather than make admission wait for PostgreSQL per fan, the
// token waits: issue records a batch of grants, and only then signs and stores their tokens, and only a stored or
// just-issued token is ever handed to a fan (status, stream, cookie). Every token in a fan's hands is thus for an
// admission restore brings back. An admission the script made and nobody recorded (its replica died in between,
// or PostgreSQL was down) was never delivered; it stays in the store's unrecorded set until some tick records it,
// and the cursor recorded for rebuilds (TickResult.DurableCursor) stays below its ticket, so if Redis is lost first
// the fan's place is still ahead of the rebuilt cursor and the fan, back with its receipt or its open stream, is
// admitted again before anyone behind it.
//
// What a loss costs a show (redis/durable_test.go, redis/admitted_test.go and the chaos test check it):
//   - Recovered exactly, from the records: the operator's settings (pause and opening included), the fairness seed
//     and its commitment, the draw's count and digest, and the revocations, so a revoked or used token stays
//     refused.
//   - Admitted fans stay admitted: their active slots and grants come back from shared/admission's record, their
//     tokens still pass, and status hands back the same token (Ed25519 is deterministic and the claims are the
//     grant's).
//   - A waiting fan keeps its ticket when it comes back with its receipt (the page joins again when it
//     reconnects, and a status poll with the receipt does too), or when its stream stayed open: the replica
//     holding the stream puts it back (restore, then each heartbeat flush). The queue goes on with the fans who
//     are back, so its cursor may pass the ticket of a fan still on its way (a phone asleep, a stream backing
//     off): within the turn hold of the rebuild that fan still gets its ticket back, at the head of the line, as
//     a fan skipped while away does, and once only (restore records the rebuilt cursor and ceiling; join.lua
//     keeps the fans given back their tickets). The loss takes the list of fans skipped while away with it: a fan
//     whose ticket the cursor had passed before the loss is asked about in the admission record (Entry.Passed,
//     Ask.Returning), and one never admitted gets its ticket back the same way. A fan who comes back after the
//     turn hold is out of line, as one who left, and joins again at the back.
//   - The cursor comes back as recorded, at most a second (or a tick) behind: fans skipped in that second for a
//     missing heartbeat may be served again if they come back with their receipt, and the positions shown grow by
//     at most that second's admissions, never out of order.
//   - The pre-opening pool is not recorded, on purpose: that would put a PostgreSQL write on every pre-opening
//     join, when the whole crowd arrives at once, and its order is drawn from the recorded seed anyway. Fans with
//     an open stream are put back in it by their replica, fans who poll or join again with their receipt (ticket
//     0) at that request; a fan who does neither before the draw joins after it, at the back. So does a fan whose
//     receipt predates the draw when the loss comes after it (status answers and stream connections refresh the
//     receipt once the draw gave a ticket).
//   - Heartbeats, the admitted and skipped counters and the rate budget's carry start again from zero.
//
// Ordering after a rebuild: a fan back with a receipt whose ticket is ahead of the recorded cursor holds the same
// ticket as before, so receipt holders keep their order and their positions (ticket - cursor) exactly; a fan who
// joins without one gets a ticket above the recorded ceiling, behind every ticket ever handed out, and is told
// its position without the tickets up to that ceiling that nobody in line holds (Gap): the fans ahead of it. After a wipe no
// ticket is ever held by two fans, and a receipt proves its own user's place only (its subject is checked).
//
// A failover is a smaller loss: Redis replicates asynchronously, so a replica promoted when its master dies may
// lack the master's last few milliseconds of writes. Nothing looks missing (the queue's state is there, only a
// little old), so nothing is rebuilt. What it costs depends on the edge's QUEUE_JOIN_REPLICAS:
//   - Off (the default): a join made in those milliseconds is forgotten and its ticket may be handed out again.
//     The forgotten fan's stream or poll finds no place and the fan joins again with its receipt, getting its
//     ticket back (shared with the later fan: both are let in together) or, once the cursor has passed it, the
//     head of the line; it is let in at most a tick or two late, after fans behind it.
//   - On (set to the replicas each master has: 1 in a six-node cluster): the store tells a fan a place only once
//     Redis's WAIT confirmed the replicas hold it, and the opening draw waits the same way (redis/replicas.go).
//     The promoted replica, the only one there was, holds every place a fan was told, so no ticket goes to two
//     fans and admission order survives the failover exactly (loadtest/chaos TestFailoverDuringCrowd fails on
//     any inversion). The price: each join shares a WAIT with the joins sent beside it (BENCHMARKS.md); a join
//     the replicas do not confirm within QUEUE_JOIN_REPLICA_TIMEOUT answers 503 and its retry finds the same
//     place; and a master whose replica was promoted has none, so until a replica is back every join that
//     would tell a place answers 503 (fans in line still poll and stream, and admitted fans are let in: a
//     lookup writes nothing, and an admission is durable by its record). With more replicas than
//     QUEUE_JOIN_REPLICAS the cluster may promote one that did not confirm, and the option only narrows the
//     loss. Writes that tell no fan a place (heartbeats, counters, admissions) are not waited for.

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
	line := show
	var le *LineError
	if errors.As(err, &le) {
		line = le.Line
	}
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
		return s.restore(ctx, show, line)
	case errors.As(err, &seqs):
		return s.reserve(ctx, show, line, seqs.LastSeq)
	}
	return err
}

// restore rebuilds a show's queue state in the store from the records (once at a time per show here; the store's
// script makes concurrent restores on several replicas harmless): the state of line, which is the show itself
// unless the queue is partitioned. A line has its own cursor and ceiling on record; the seed and the draw are
// the show's.
func (s *Service) restore(ctx context.Context, show, line string) error {
	_, err, _ := s.flights.Do("restore "+line, func() (any, error) {
		d, err := s.record.Queue(ctx, show)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		if line != show {
			l, err := s.record.Queue(ctx, line)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
			}
			d.Cursor, d.Ceiling = l.Cursor, l.Ceiling
		}
		live, _, err := s.queues.Record().Grants(ctx, show, time.Now())
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		for _, g := range live {
			d.Grants = append(d.Grants, Grant{UserID: g.UserID, JTI: g.JTI, IssuedAt: g.IssuedAt, ExpiresAt: g.ExpiresAt})
		}
		if err := s.store.Restore(ctx, line, d); err != nil { // keeps the line's own grants
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
		s.log.Log(ctx, level, "waitroom: queue state restored from the record", "show", line, "cursor", d.Cursor,
			"ceiling", d.Ceiling, "admitted", len(d.Grants))
		return nil, nil
	})
	return err
}

// reserve raises a line's ticket ceiling (a single queue's: its show's) above lastSeq, in the record first.
func (s *Service) reserve(ctx context.Context, show, line string, lastSeq int64) error {
	_, err, _ := s.flights.Do("reserve "+line, func() (any, error) {
		c, err := s.record.Reserve(ctx, line, lastSeq+seqBlock, 0)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		err = s.store.SetCeiling(ctx, line, c)
		if errors.Is(err, ErrNoState) {
			err = s.restore(ctx, show, line)
		}
		return nil, err
	})
	return err
}

// recovering runs a store step, restoring what the store lost (settings, the queue's state) or reserving the
// tickets it asks for, and trying again, up to five times. A queue the record says is off answers off().
// Joins, lookups, bypass steps and admission ticks all go through it, so a store that lost a show is put back
// the same way whichever of them finds it first.
//
// A partitioned queue's tick steps every line and names one line per request (LineError): a new show, or a
// Redis that lost them, has all K lines (up to 64) to restore, so a line's first request is not counted
// against the five, which bound the retries of one and the same request.
func recovering[T any](ctx context.Context, s *Service, show string, step func() (T, error), off func() (T, error)) (T, error) {
	var asked map[string]bool // the lines whose first request has been answered
	for attempt := 0; ; attempt++ {
		v, err := step()
		if err == nil {
			return v, nil
		}
		if le := (*LineError)(nil); errors.As(err, &le) && !asked[le.Line] && len(asked) < ticketLines {
			if asked == nil {
				asked = map[string]bool{}
			}
			asked[le.Line] = true
			attempt--
		}
		if attempt >= 5 {
			var zero T
			return zero, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		switch rerr := s.recover(ctx, show, err); {
		case errors.Is(rerr, errQueueOff):
			return off()
		case rerr != nil:
			var zero T
			return zero, rerr
		}
	}
}

// restoring is recovering for a fan's step: a queue found off answers as closed.
func (s *Service) restoring(ctx context.Context, show string, step func() (Entry, error)) (Entry, error) {
	return recovering(ctx, s, show, step, func() (Entry, error) { return s.closed(ctx, show) })
}

// closed answers a join or lookup for a show whose record says the queue is off.
func (s *Service) closed(ctx context.Context, show string) (Entry, error) {
	ok, err := s.store.Exists(ctx, show)
	if err != nil {
		return Entry{}, err
	}
	if !ok {
		return Entry{}, ErrUnknownShow
	}
	return Entry{Status: Closed, Found: true}, nil
}
