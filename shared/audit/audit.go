// Package audit is the operator audit log in PostgreSQL: who changed what on which show, with the value before and
// after. Every operator change (queue settings, pause, kick, sale opening, close) is recorded here by whichever
// service made it, and the console lists it. The log is append-only: nothing here updates or deletes an entry.
package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
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
}

// Filter selects entries for List. Limit <= 0 means DefaultLimit; it is capped at MaxLimit.
type Filter struct {
	ShowID string
	Limit  int
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
	pool *pgxpool.Pool
}

// New returns a log on pool, whose table shared/migrate creates (audit_log).
func New(pool *pgxpool.Pool) *Log { return &Log{pool: pool} }

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
	if _, err := l.pool.Exec(ctx, `INSERT INTO audit_log (at, actor, action, show_id, old, new)
		VALUES (COALESCE($1::timestamptz, now()), $2, $3, $4, $5::jsonb, $6::jsonb)`,
		at, Actor(e.Actor), e.Action, e.ShowID, old, nw); err != nil {
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

// List returns entries matching f, newest first.
func (l *Log) List(ctx context.Context, f Filter) ([]Entry, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	rows, err := l.pool.Query(ctx, `SELECT id, at, actor, action, show_id, old, new FROM audit_log
		WHERE $1 = '' OR show_id = $1 ORDER BY id DESC LIMIT $2`, f.ShowID, limit)
	if err != nil {
		return nil, fmt.Errorf("audit: list: %w", err)
	}
	defer rows.Close()
	out := []Entry{}
	for rows.Next() {
		var e Entry
		var old, nw []byte
		if err := rows.Scan(&e.ID, &e.At, &e.Actor, &e.Action, &e.ShowID, &old, &nw); err != nil {
			return nil, fmt.Errorf("audit: list: %w", err)
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
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit: list: %w", err)
	}
	return out, nil
}
