// Package eventstream is the format of the platform's lifecycle event stream, which booking and the edge both
// append to: one Redis stream, each entry one event with a dedupe id, trimmed on every append, and the relay that
// moves a transactional outbox into it (Relay): booking relays its outbox, the edge the admission record's queue
// outbox. Consumers (booking/redis.Consumer) decode entries with Decode. docs/EVENTS.md documents the events.
package eventstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultKey is the stream's key. It is a single key, so it lives in one slot on Redis Cluster whatever its
// name; the hash tag keeps any key named after it in the same slot.
const DefaultKey = "{flashseat:events}:lifecycle"

// Event is one lifecycle event.
type Event struct {
	// ID is the event's dedupe id, the same on every delivery: a consumer that has seen it may drop the event.
	ID      string
	Type    string
	ShowID  string
	Subject string // what the event is about: a booking id, a ticket id, a show id
	At      time.Time
	Data    json.RawMessage // the type's fields, a JSON object
}

// Config names the stream and bounds it.
type Config struct {
	Key string // default DefaultKey
	// MaxLen keeps about the newest MaxLen entries (XADD MAXLEN ~): trimming happens a whole radix-tree node at
	// a time, so the stream may hold up to a node (100 entries by default) more. Default 100,000.
	MaxLen int64
	// MaxAge, when set, trims by age instead (XADD MINID ~ <now - MaxAge>).
	MaxAge time.Duration
}

// The fields of an entry; the entry's own id (ms-seq) orders entries, Event.ID dedupes them.
const (
	FieldID      = "id"
	FieldType    = "type"
	FieldShow    = "show"
	FieldSubject = "subject"
	FieldAt      = "at"
	FieldData    = "data"
)

// Append adds e to the stream of cfg (XADD), trimming it in the same command.
func Append(ctx context.Context, rdb redis.Cmdable, cfg Config, e Event, now time.Time) error {
	if e.ID == "" || e.Type == "" {
		return errors.New("eventstream: an event needs an id and a type")
	}
	if cfg.Key == "" {
		cfg.Key = DefaultKey
	}
	if cfg.MaxLen <= 0 {
		cfg.MaxLen = 100_000
	}
	data := e.Data
	if len(data) == 0 {
		data = json.RawMessage("{}")
	}
	args := &redis.XAddArgs{Stream: cfg.Key, Approx: true, Values: []any{
		FieldID, e.ID, FieldType, e.Type, FieldShow, e.ShowID, FieldSubject, e.Subject,
		FieldAt, e.At.UTC().Format(time.RFC3339Nano), FieldData, []byte(data)}}
	if cfg.MaxAge > 0 {
		args.MinID = strconv.FormatInt(now.Add(-cfg.MaxAge).UnixMilli(), 10)
	} else {
		args.MaxLen = cfg.MaxLen
	}
	if err := rdb.XAdd(ctx, args).Err(); err != nil {
		return fmt.Errorf("eventstream: xadd %s: %w", e.Type, err)
	}
	return nil
}

// Decode reads an entry back; an entry that is not an event (written by hand) is an error, not a guess.
func Decode(m redis.XMessage) (Event, error) {
	str := func(k string) string { v, _ := m.Values[k].(string); return v }
	e := Event{ID: str(FieldID), Type: str(FieldType), ShowID: str(FieldShow), Subject: str(FieldSubject),
		Data: json.RawMessage(str(FieldData))}
	if e.ID == "" || e.Type == "" {
		return e, fmt.Errorf("eventstream: entry %s is not an event", m.ID)
	}
	if at, err := time.Parse(time.RFC3339Nano, str(FieldAt)); err == nil {
		e.At = at
	}
	if !json.Valid(e.Data) {
		e.Data = json.RawMessage("{}")
	}
	return e, nil
}
