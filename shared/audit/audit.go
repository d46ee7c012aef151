// Package audit is the operator audit log in PostgreSQL: who changed what on which show, with the value before and
// after. Every operator change (queue settings, pause, kick, sale opening, close) is recorded here by whichever
// service made it, and the console lists it; so are the fans' ticket transfers, recorded from the event stream. The log is append-only: nothing here updates or deletes an entry.
package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/shared/infra/pgshard"
)

// OperatorHeader names the operator on an admin request; the console's edge sets it from the operator's session.
const OperatorHeader = "X-Operator"

// DefaultActor is recorded when an admin request names no operator (a script using the bearer token).
const DefaultActor = "api"

// maxActor bounds what a client can write into the log through OperatorHeader.
const maxActor = 200

// Actor returns who to record for an admin request whose OperatorHeader value is header: the header, trimmed and
// bounded, else DefaultActor.
func Actor(header string) string {
	a := strings.TrimSpace(header)
	if a == "" {
		return DefaultActor
	}
	if len(a) > maxActor {
		a = strings.ToValidUTF8(a[:maxActor], "")
	}
	return a
}

// Entry is one operator change. Old and New are JSON values (an object, a boolean, ...) or nil when there was
// nothing before (a creation) or after (a deletion).
type Entry struct {
	ID     int64           `json:"id"`
	At     time.Time       `json:"at"`
	Actor  string          `json:"actor"`
	Action string          `json:"action"`
	ShowID string          `json:"showId,omitempty"`
	Old    json.RawMessage `json:"old,omitempty"`
	New    json.RawMessage `json:"new,omitempty"`
	// EventID names the lifecycle event an entry was recorded from (a ticket transfer's): the log keeps one entry
	// per event, however often the stream delivers it. Empty for an operator's own change.
	EventID string `json:"eventId,omitempty"`
}

// Filter selects entries for List. Limit <= 0 means DefaultLimit; it is capped at MaxLimit.
type Filter struct {
	ShowID string
	// Since, when not zero, keeps the entries made at or after it; Actions, when not empty, those with one of
	// these actions (the console's rate chart asks for one show's queue changes of the last ten minutes).
	Since   time.Time
	Actions []string
	Limit   int
}

// Limits of List.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// ErrInvalid wraps an entry Record refuses: no action, or Old/New not valid JSON.
var ErrInvalid = errors.New("audit: invalid entry")

// Log records and lists entries.
type Log struct {
	dbs *pgshard.Pools
}

// New returns a log on pool, whose table shared/infra/migrate creates (audit_log).
func New(pool *pgxpool.Pool) *Log { return NewSharded(pgshard.Single(pool)) }

// NewSharded returns a log that keeps a show's entries on the database dbs places the show on (DATABASE_SHARDS)
// and entries of no show on the main database. Listing every show's entries asks every database at once under
// pgshard.FanOutTimeout and fails whole if one cannot answer.
func NewSharded(dbs *pgshard.Pools) *Log { return &Log{dbs: dbs} }

// Record appends e. ID is ignored (the log assigns it); a zero At means now; an empty Actor means DefaultActor.
func (l *Log) Record(ctx context.Context, e Entry) error {
	if strings.TrimSpace(e.Action) == "" {
		return fmt.Errorf("%w: no action", ErrInvalid)
	}
	old, err := jsonArg(e.Old)
	if err != nil {
		return fmt.Errorf("%w: old: %w", ErrInvalid, err)
	}
	nw, err := jsonArg(e.New)
	if err != nil {
		return fmt.Errorf("%w: new: %w", ErrInvalid, err)
	}
	var at any // NULL lets the column default (the server's now()) apply
	if !e.At.IsZero() {
		at = e.At
	}
	db := l.dbs.Main()
	if e.ShowID != "" {
		db = l.dbs.For(e.ShowID)
	}
	q := `INSERT INTO audit_log (at, actor, action, show_id, old, new)
		VALUES (COALESCE($1::timestamptz, now()), $2, $3, $4, $5::jsonb, $6::jsonb)`
	args := []any{at, Actor(e.Actor), e.Action, e.ShowID, old, nw}
	if e.EventID != "" {
		q = `INSERT INTO audit_log (at, actor, action, show_id, old, new, event_id)
		VALUES (COALESCE($1::timestamptz, now()), $2, $3, $4, $5::jsonb, $6::jsonb, $7)
		ON CONFLICT (event_id) WHERE event_id IS NOT NULL DO NOTHING`
		args = append(args, e.EventID)
	}
	if _, err := db.Exec(ctx, q, args...); err != nil {
		return fmt.Errorf("audit: record %s: %w", e.Action, err)
	}
	return nil
}

// jsonArg returns raw as a query argument: nil for no value, else the text after checking it is JSON.
func jsonArg(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if !json.Valid(raw) {
		return nil, errors.New("not valid JSON")
	}
	return string(raw), nil
}

// List returns entries matching f, newest first: by id on one database; across databases (every show's entries,
// sharded) by time, each database's newest Limit merged, as ids are each database's own.
func (l *Log) List(ctx context.Context, f Filter) ([]Entry, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	var out []Entry
	var err error
	if f.ShowID != "" || !l.dbs.Sharded() {
		db := l.dbs.Main()
		if f.ShowID != "" {
			db = l.dbs.For(f.ShowID)
		}
		out, err = list(ctx, db, f, limit)
	} else {
		out, err = pgshard.All(ctx, l.dbs, true, func(ctx context.Context, db *pgxpool.Pool) ([]Entry, error) {
			return list(ctx, db, f, limit)
		})
		slices.SortStableFunc(out, func(a, b Entry) int { return b.At.Compare(a.At) })
		out = append([]Entry{}, out[:min(len(out), limit)]...) // never null in JSON
	}
	if err != nil {
		return nil, fmt.Errorf("audit: list: %w", err)
	}
	return out, nil
}

// list is one database's entries matching f (every show's when f.ShowID is empty), newest first.
func list(ctx context.Context, db *pgxpool.Pool, f Filter, limit int) ([]Entry, error) {
	var since any // NULL: no lower bound
	if !f.Since.IsZero() {
		since = f.Since
	}
	rows, err := db.Query(ctx, `SELECT id, at, actor, action, show_id, old, new, coalesce(event_id, '') FROM audit_log
		WHERE ($1 = '' OR show_id = $1) AND ($3::timestamptz IS NULL OR at >= $3)
		  AND (cardinality($4::text[]) = 0 OR action = ANY($4))
		ORDER BY id DESC LIMIT $2`, f.ShowID, limit, since, append([]string{}, f.Actions...))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Entry{}
	for rows.Next() {
		var e Entry
		var old, nw []byte
		if err := rows.Scan(&e.ID, &e.At, &e.Actor, &e.Action, &e.ShowID, &old, &nw, &e.EventID); err != nil {
			return nil, err
		}
		e.At = e.At.UTC()
		if old != nil {
			e.Old = json.RawMessage(old)
		}
		if nw != nil {
			e.New = json.RawMessage(nw)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
