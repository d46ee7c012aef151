package http

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/waitroom"
)

// A position's data, formatted by hand, is what encoding/json writes for it.
func TestAppendPosition(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		u    waitroom.Update
	}{
		{"first in line", waitroom.Update{Position: 1, ETA: 50 * time.Millisecond}},
		{"far back", waitroom.Update{Position: 987654, ETA: 3*time.Hour + 1}},
		{"no estimate yet", waitroom.Update{Position: 12}},
		{"paused", waitroom.Update{Position: 40, Paused: true}},
		{"largest", waitroom.Update{Position: 1<<63 - 1, ETA: 1<<63 - 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, _ := json.Marshal(struct {
				Position   int64 `json:"position"`
				EtaSeconds int64 `json:"etaSeconds"`
				Paused     bool  `json:"paused"`
			}{tc.u.Position, seconds(tc.u.ETA), tc.u.Paused})
			if got := appendPosition([]byte("x"), tc.u); string(got) != "x"+string(want) {
				t.Errorf("got %s, want x%s", got, want)
			}
		})
	}
}

// A stream's events: the first position, none within the second after it, the newest one after it, the same
// state again only as the 2 s refresh, a reconnect's Last-Event-ID honoured, and the final admission.
func TestStreamEvent(t *testing.T) {
	t.Parallel()
	at := time.Now()
	pos := func(seq, cursor int64) waitroom.Update {
		return waitroom.Update{Status: waitroom.Waiting, Seq: seq, Cursor: cursor, Position: seq - cursor,
			ETA: 2 * time.Second}
	}
	var s stream
	steps := []struct {
		name  string
		u     waitroom.Update
		after time.Duration
		want  string // "" for no event
		more  bool
	}{
		{"first", pos(10, 2), 0, "id: p-10-2\nevent: position\ndata: {\"position\":8,\"etaSeconds\":2,\"paused\":false}\n\n", true},
		{"moved too soon", pos(10, 3), 500 * time.Millisecond, "", true},
		{"moved a second later", pos(10, 4), 1000 * time.Millisecond, "id: p-10-4\nevent: position\n", true},
		{"same state", pos(10, 4), 1200 * time.Millisecond, "", true},
		{"refresh", pos(10, 4), 2600 * time.Millisecond, "id: p-10-4\nevent: position\n", true},
		{"paused", waitroom.Update{Seq: 10, Cursor: 4, Position: 6, Paused: true}, 3700 * time.Millisecond,
			"id: p-10-4-p\nevent: position\ndata: {\"position\":6,\"etaSeconds\":0,\"paused\":true}\n\n", true},
		{"admitted", waitroom.Update{Status: waitroom.Admitted, Grant: &waitroom.Grant{JTI: "j1", Token: "tok"}},
			3800 * time.Millisecond, "id: a-j1\nevent: admitted\ndata: {\"admissionToken\":\"tok\"", false},
	}
	for _, st := range steps {
		got, more := s.event(nil, st.u, false, at.Add(st.after))
		if !strings.HasPrefix(string(got), st.want) || (st.want == "") != (len(got) == 0) || more != st.more {
			t.Errorf("%s: got %q (more %v), want %q… (more %v)", st.name, got, more, st.want, st.more)
		}
	}
	resumed := stream{lastID: []byte("p-10-4")}
	if got, more := resumed.event(nil, pos(10, 4), true, at); len(got) != 0 || !more {
		t.Errorf("reconnect with the current id: got %q (more %v), want nothing", got, more)
	}
	if got, _ := resumed.event(nil, pos(10, 5), false, at.Add(time.Second)); !strings.HasPrefix(string(got), "id: p-10-5\n") {
		t.Errorf("after the reconnect: got %q, want the next position", got)
	}
}

// BenchmarkPositionEvent is what a writer spends formatting one position event, the event every waiting fan
// gets about once a second, and a check that costs nothing (the next tick within the second).
func BenchmarkPositionEvent(b *testing.B) {
	var s stream
	buf := make([]byte, 0, 256)
	at := time.Now()
	b.ReportAllocs()
	for i := range b.N {
		u := waitroom.Update{Status: waitroom.Waiting, Seq: 1e9, Cursor: int64(i), Position: 1e9 - int64(i),
			ETA: time.Duration(1e9-i) * 50 * time.Millisecond}
		buf, _ = s.event(buf[:0], u, false, at.Add(time.Duration(i)*time.Second))
		if len(buf) == 0 {
			b.Fatal("no event")
		}
		buf, _ = s.event(buf[:0], u, false, at.Add(time.Duration(i)*time.Second+200*time.Millisecond))
	}
}
