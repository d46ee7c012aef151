package waitroom

import (
	"errors"
	"sort"
)

// A partitioned queue (the settings' "partitions", K > 1) is K lines, each a whole queue of its own on a hash slot
// of its own (waitroom/redis, rediskey.Line): a fan joins the line their id hashes to, and the admission tick
// merges the lines' heads. This file is what the merge and a fan's position across lines rest on.
//
// Order. Each line stamps its tickets with arrival marks: a new ticket that comes MarkEvery or more after the
// line's last mark is marked (its ticket, the line's Redis time). A ticket's arrival is known to within MarkEvery
// of its floor mark (the line's last mark at or below it): the next ticket to come MarkEvery later is marked. The
// show's one order is by floor mark's time, then line, then ticket. A fan admitted ahead of a fan who joined
// earlier in another line thus joined less than MarkEvery after them (plus the skew between the masters'
// clocks). The pre-sale draw marks its tickets with their group in the shuffled order instead of a time (smaller
// than every time), so the draw's order holds across lines too, within groups of DrawGroup places.
//
// Positions. A fan's position counts, in every line of their lane (lanes.go), the tickets ahead of the line's
// cursor that come before the fan in that order: in their own line as a single queue does (ticket - cursor, without a rebuild's gap), in
// each other line from its marks. It is what the admission tick will do, so it falls as the fan is served and is
// honest across lines.

// MarkEvery is the arrival time a line's marks are at most apart in (ms): the order's bound.
const MarkEvery = 100

// DrawGroup is how many consecutive places of the pre-sale draw share one mark.
const DrawGroup = 16

// ticketLines is how many lines a partitioned ticket number leaves room for (rediskey.MaxPartitions).
const ticketLines = 64

// Ticket is the ticket number a fan of line p is told for the line's ticket s: a partitioned queue's tickets
// carry their line, so that a receipt, a stream and a status know where to look. A single queue's are its own.
func Ticket(k, p int, s int64) int64 {
	if k <= 1 || s <= 0 {
		return s
	}
	return s*ticketLines + int64(p)
}

// SplitTicket is Ticket's inverse: the line and the line's ticket.
func SplitTicket(k int, t int64) (p int, s int64) {
	if k <= 1 || t <= 0 {
		return 0, t
	}
	return int(t % ticketLines), t / ticketLines
}

// Mark is a line's arrival mark: its tickets from Seq up to the next mark's came at or after At (Redis ms; a
// draw group's index for the draw's tickets).
type Mark struct{ Seq, At int64 }

// Line is one line's state at a tick.
type Line struct {
	ID      string // the line's id (rediskey.Line)
	Cursor  int64
	LastSeq int64
	Gap     Gap
	Marks   []Mark // ascending in both; the floor mark of Cursor+1 first
	// Durable is the line's cursor that may be recorded (TickResult.DurableCursor).
	Durable int64
	Waiting int64
	// Lane is the line's lane (lanes.go): positions count only the fans ahead in the same lane, and Share is
	// the lane's part of the rate while it has fans waiting (0: no lanes, the whole rate).
	Lane  int
	Share float64
}

// Lines is a partitioned queue at a tick, every line's: what the hub computes each fan's position from.
type Lines []Line

// at is the time of ticket s's floor mark in marks (0 when it has none: a ticket from before a rebuild comes
// first).
func at(marks []Mark, s int64) int64 {
	i := sort.Search(len(marks), func(i int) bool { return marks[i].Seq > s })
	if i == 0 {
		return 0
	}
	return marks[i-1].At
}

// before is how many tickets of line q come before a ticket of line p marked t: those below q's first mark that
// comes after (t, p).
func (l Lines) before(q int, t int64, p int) int64 {
	marks := l[q].Marks
	i := sort.Search(len(marks), func(i int) bool {
		return marks[i].At > t || (marks[i].At == t && q > p)
	})
	if i == len(marks) {
		return l[q].LastSeq
	}
	return marks[i].Seq - 1
}

// Position is the position of ticket (Ticket's number) across the lines: 1-based, 0 when unknown.
func (l Lines) Position(ticket int64) int64 { return l.PositionAt(ticket, 0) }

// PositionAt is Position for a ticket whose floor mark's time is known to be mark (0: read it from the lines).
func (l Lines) PositionAt(ticket, mark int64) int64 {
	p, s := SplitTicket(len(l), ticket)
	if p >= len(l) || s <= 0 {
		return 0
	}
	pos := l[p].Gap.Position(s, l[p].Cursor)
	if s <= l[p].Cursor {
		return pos
	}
	t := mark
	if t == 0 {
		t = at(l[p].Marks, s)
	}
	for q := range l {
		if q != p && l[q].Lane == l[p].Lane {
			pos += max(0, l.before(q, t, p)-l[q].Cursor)
		}
	}
	return pos
}

// Passed reports whether ticket's line has taken it off its queue (admitted or skipped).
func (l Lines) Passed(ticket int64) bool {
	p, s := SplitTicket(len(l), ticket)
	return p < len(l) && s > 0 && s <= l[p].Cursor
}

// Order is the merge: given each line's next tickets (ascending; more exist beyond those of a line marked in
// more), how many of the first n in the show's order come from each line. Tickets at or below their line's cursor
// (fans put back at the head) come first. It stops where a line with more tickets than it was given runs out:
// its next one might come first.
func (l Lines) Order(heads [][]int64, more []bool, n int) []int {
	take := make([]int, len(l))
	for ; n > 0; n-- {
		best, bestAt := -1, int64(0)
		for q := range l {
			if take[q] >= len(heads[q]) {
				if more[q] {
					return take
				}
				continue
			}
			s := heads[q][take[q]]
			t := at(l[q].Marks, s)
			if s <= l[q].Cursor {
				t = -1
			}
			if best < 0 || t < bestAt {
				best, bestAt = q, t
			}
		}
		if best < 0 {
			break
		}
		take[best]++
	}
	return take
}

// lineErr is err of a step on line of show, saying which line when the show is partitioned.
func lineErr(line, show string, err error) error {
	if line == show || !errors.Is(err, ErrNoState) {
		return err
	}
	return &LineError{Line: line, Err: err}
}
