package audit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/audit"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
)

func newLog(t *testing.T) *audit.Log {
	t.Helper()
	return audit.New(pgtest.New(t))
}

func TestRecordList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLog(t)
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	entries := []audit.Entry{
		{Actor: "alice", Action: "queue.settings", ShowID: "s1", Old: json.RawMessage(`{"enabled":false}`),
			New: json.RawMessage(`{"enabled":true}`), At: at},
		{Action: "queue.pause", ShowID: "s2", Old: json.RawMessage(`false`), New: json.RawMessage(`true`)},
		{Actor: "bob", Action: "admission.revoke", ShowID: "s1", New: json.RawMessage(`{"jti":"j1"}`)},
	}
	for _, e := range entries {
		if err := l.Record(ctx, e); err != nil {
			t.Fatalf("record %s: %v", e.Action, err)
		}
	}

	all, err := l.List(ctx, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(all); got != "admission.revoke,queue.pause,queue.settings" {
		t.Fatalf("all newest first: got %s", got)
	}
	if all[1].Actor != audit.DefaultActor {
		t.Errorf("no actor: got %q, want %q", all[1].Actor, audit.DefaultActor)
	}
	if all[1].At.IsZero() || time.Since(all[1].At) > time.Minute {
		t.Errorf("default time: got %v", all[1].At)
	}
	if !all[2].At.Equal(at) {
		t.Errorf("given time: got %v, want %v", all[2].At, at)
	}
	if all[0].Old != nil {
		t.Errorf("no old value: got %s", all[0].Old)
	}
	var nw struct{ Enabled bool }
	if err := json.Unmarshal(all[2].New, &nw); err != nil || !nw.Enabled {
		t.Errorf("new value: got %s (%v)", all[2].New, err)
	}

	s1, err := l.List(ctx, audit.Filter{ShowID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(s1); got != "admission.revoke,queue.settings" {
		t.Fatalf("show s1: got %s", got)
	}
	one, err := l.List(ctx, audit.Filter{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(one); got != "admission.revoke" {
		t.Fatalf("limit 1: got %s", got)
	}
	recent, err := l.List(ctx, audit.Filter{ShowID: "s1", Since: at.Add(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(recent); got != "admission.revoke" {
		t.Fatalf("s1 since after the first entry: got %s", got)
	}
	queue, err := l.List(ctx, audit.Filter{Actions: []string{"queue.settings", "queue.pause"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(queue); got != "queue.pause,queue.settings" {
		t.Fatalf("two actions: got %s", got)
	}
	if got, err := l.List(ctx, audit.Filter{Actions: []string{"queue.settings"}, Since: at.Add(time.Second)}); err != nil || len(got) != 0 {
		t.Fatalf("an action, since after its only entry: got %v, %v", got, err)
	}
	none, err := l.List(ctx, audit.Filter{ShowID: "nope"})
	if err != nil || none == nil || len(none) != 0 {
		t.Fatalf("unknown show: got %v, %v; want an empty list", none, err)
	}
}

func TestRecordRefusesInvalid(t *testing.T) {
	t.Parallel()
	l := newLog(t)
	for name, e := range map[string]audit.Entry{
		"no action":    {Actor: "a", ShowID: "s"},
		"blank action": {Action: "  "},
		"bad old":      {Action: "x", Old: json.RawMessage(`{`)},
		"bad new":      {Action: "x", New: json.RawMessage(`nope`)},
	} {
		if err := l.Record(context.Background(), e); !errors.Is(err, audit.ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
	all, err := l.List(context.Background(), audit.Filter{})
	if err != nil || len(all) != 0 {
		t.Fatalf("refused entries were written: %v, %v", all, err)
	}
}

func TestListLimitCapped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLog(t)
	for i := range 3 {
		if err := l.Record(ctx, audit.Entry{Action: fmt.Sprint("a", i)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := l.List(ctx, audit.Filter{Limit: audit.MaxLimit * 10})
	if err != nil || len(got) != 3 {
		t.Fatalf("huge limit: got %d entries, %v", len(got), err)
	}
}

func TestActor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, in, want string }{
		{"absent", "", "api"},
		{"blank", "   ", "api"},
		{"named", " ops@example.com ", "ops@example.com"},
		{"bounded", strings.Repeat("x", 500), strings.Repeat("x", 200)},
	} {
		if got := audit.Actor(c.in); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func actions(es []audit.Entry) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Action
	}
	return strings.Join(s, ",")
}

// TestRecordEventOnce: an entry recorded from an event is kept once however often it is recorded (the stream
// delivers at least once), while operator entries, which have no event, are all kept.
func TestRecordEventOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLog(t)
	for range 3 {
		for _, e := range []audit.Entry{
			{Actor: "fan u1", Action: "ticket.transfer_sent", ShowID: "s1", New: json.RawMessage(`{"seatId":"A1"}`), EventID: "ob_7"},
			{Actor: "fan u2", Action: "ticket.transferred", ShowID: "s1", New: json.RawMessage(`{"seatId":"A1"}`), EventID: "ob_8"},
			{Action: "queue.pause", ShowID: "s1", New: json.RawMessage(`true`)},
		} {
			if err := l.Record(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
	}
	all, err := l.List(ctx, audit.Filter{ShowID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(all); got != "queue.pause,queue.pause,queue.pause,ticket.transferred,ticket.transfer_sent" {
		t.Fatalf("entries %s, want each event's once and every operator change", got)
	}
	if all[3].EventID != "ob_8" || all[0].EventID != "" {
		t.Errorf("event ids %q %q", all[3].EventID, all[0].EventID)
	}
}
