package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/eventstream"
	"github.com/flashseat/flashseat/shared/infra/pgshard"
)

// Queue events are written to queue_outbox in the transaction that records the phase they announce, and
// eventstream.Relay appends them to the lifecycle stream (Outbox). queue_phase holds each show's phase as last
// recorded and counts its changes (epoch): a change is recorded only when it differs from the recorded phase, under
// the row's lock, so replicas that all see a show sell out record it once, and the outbox's unique (show, epoch)
// would refuse a second event for one change anyway. Both tables are shared/infra/migrate's 0008_admission.

// recorded is a show's row of queue_phase.
type recorded struct {
	phase    string
	epoch    int64
	observed time.Time
}

// lockPhase reads a show's recorded phase and locks its row until tx ends, creating the row (PhaseUnknown) the
// first time.
func lockPhase(ctx context.Context, tx pgx.Tx, show string) (recorded, error) {
	if _, err := tx.Exec(ctx, `INSERT INTO queue_phase (show_id, phase, observed_at) VALUES ($1, '', to_timestamp(0))
		ON CONFLICT (show_id) DO NOTHING`, show); err != nil {
		return recorded{}, err
	}
	var r recorded
	err := tx.QueryRow(ctx, `SELECT phase, epoch, observed_at FROM queue_phase WHERE show_id = $1 FOR UPDATE`, show).
		Scan(&r.phase, &r.epoch, &r.observed)
	return r, err
}

// setPhase records show's move from prev to phase at at (the database's clock when nil), and writes the event
// the new phase announces, if any, with payload's fields added to showId, phase and previous.
func setPhase(ctx context.Context, tx pgx.Tx, show string, prev recorded, phase string, at *time.Time, payload map[string]any) error {
	epoch := prev.epoch + 1
	if _, err := tx.Exec(ctx, `UPDATE queue_phase SET phase = $2, epoch = $3, observed_at = COALESCE($4, now())
		WHERE show_id = $1`, show, phase, epoch, at); err != nil {
		return err
	}
	typ := admission.PhaseEvent(phase)
	if typ == "" {
		return nil
	}
	payload["showId"], payload["phase"], payload["previous"] = show, phase, prev.phase
	data, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO queue_outbox (show_id, epoch, type, payload) VALUES ($1, $2, $3, $4)`,
		show, epoch, typ, data)
	return err
}

// recordSettingsPhase records, in the transaction of an operator's change, the phase the change puts the queue
// in (admission.SettingsPhase) and its event.
func recordSettingsPhase(ctx context.Context, tx pgx.Tx, show string, old, now admission.Settings, version int64) error {
	prev, err := lockPhase(ctx, tx, show)
	if err != nil {
		return err
	}
	phase, ok := admission.SettingsPhase(old, now, prev.phase)
	if !ok {
		return nil
	}
	return setPhase(ctx, tx, show, prev, phase, nil, map[string]any{"cause": "operator", "settingsVersion": version})
}

// RecordPhase records the phase an admission tick found a show's queue in, and its event, unless that phase is
// recorded already or the observation is older than the phase recorded (a slow replica's tick). It reports
// whether it recorded a change. Replicas call it when they see a show's phase change, so it costs one read when
// another replica has recorded the change first.
func (r *Record) RecordPhase(ctx context.Context, c admission.PhaseChange) (bool, error) {
	var cur string
	db := r.dbs.For(c.Show)
	err := db.QueryRow(ctx, `SELECT phase FROM queue_phase WHERE show_id = $1`, c.Show).Scan(&cur)
	switch {
	case err == nil && cur == c.Phase:
		return false, nil
	case err != nil && !errors.Is(err, pgx.ErrNoRows):
		return false, fmt.Errorf("admission/postgres: queue phase %s: %w", c.Show, err)
	}
	changed := false
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		prev, err := lockPhase(ctx, tx, c.Show)
		if err != nil || prev.phase == c.Phase || !c.At.After(prev.observed) {
			return err
		}
		changed = true
		return setPhase(ctx, tx, c.Show, prev, c.Phase, &c.At, map[string]any{"cause": "admission",
			"waiting": c.Waiting, "active": c.Active, "admittedTotal": c.AdmittedTotal})
	})
	if err != nil {
		return false, fmt.Errorf("admission/postgres: record queue phase %s: %w", c.Show, err)
	}
	return changed, nil
}

// Outbox is the queue outbox as eventstream.Relay reads it. An event's dedupe id is q_<show>_<type>_<epoch>: the
// same on every relay of it, and never reused by another change of the show. Sharded, each shard's outbox is
// relayed and pruned on its own (pgshard.Sweep), so a shard that is down holds back only its own shows' events.
func (r *Record) Outbox() eventstream.Source { return queueOutbox{r} }

type queueOutbox struct{ r *Record }

func (o queueOutbox) Relay(ctx context.Context, limit int, publish func(eventstream.Event) error) (int, error) {
	publish = pgshard.Serial(publish)
	n, err := pgshard.Sweep(ctx, o.r.dbs, func(ctx context.Context, db *pgxpool.Pool) (int64, error) {
		n, err := relayOutbox(ctx, db, limit, publish)
		return int64(n), err
	})
	return int(n), err
}

// relayOutbox relays up to limit of one database's unpublished queue events, in order.
func relayOutbox(ctx context.Context, db *pgxpool.Pool, limit int, publish func(eventstream.Event) error) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id, show_id, epoch, type, payload, created_at FROM queue_outbox
			WHERE published_at IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`, limit)
		if err != nil {
			return err
		}
		var ids []int64
		evs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (eventstream.Event, error) {
			var id, epoch int64
			var e eventstream.Event
			err := row.Scan(&id, &e.ShowID, &epoch, &e.Type, &e.Data, &e.At)
			ids = append(ids, id)
			e.ID = "q_" + e.ShowID + "_" + e.Type + "_" + strconv.FormatInt(epoch, 10)
			e.Subject = e.ShowID
			return e, err
		})
		if err != nil {
			return err
		}
		for _, e := range evs {
			if publish(e) != nil {
				break // keep order: the rest waits for the next pass
			}
			n++
		}
		if n == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, `UPDATE queue_outbox SET published_at = now() WHERE id = ANY($1)`, ids[:n])
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("admission/postgres: queue outbox: %w", err)
	}
	return n, nil
}

func (o queueOutbox) Prune(ctx context.Context, before time.Time, limit int) (int, error) {
	n, err := pgshard.Sweep(ctx, o.r.dbs, func(ctx context.Context, db *pgxpool.Pool) (int64, error) {
		tag, err := db.Exec(ctx, `DELETE FROM queue_outbox WHERE id IN (SELECT id FROM queue_outbox
			WHERE published_at IS NOT NULL AND published_at < $1 LIMIT $2)`, before, limit)
		return tag.RowsAffected(), err
	})
	if err != nil {
		return 0, fmt.Errorf("admission/postgres: prune queue outbox: %w", err)
	}
	return int(n), nil
}
