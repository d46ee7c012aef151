package admission

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Lanes share a show's admission rate by weight (a verified-fan sale's fan club 0.7, general 0.3): each lane is
// a queue of its own (waitroom/redis: the lane's own lines), the tick splits each budget between the lanes with
// fans waiting by their shares, and a lane with nobody waiting lends its share to the others. A fan is in the
// lane their invitation or bypass code names; everyone else is in the general lane (GeneralLane), which lanes,
// when set, must include. No lanes is one general lane with the whole rate, as before lanes.

// MaxLanes is the most lanes a show may have; lanes times partitions is at most rediskey.MaxPartitions.
const MaxLanes = 8

// GeneralLane is the lane of a fan with no invitation and no code naming another, and of an invitation that
// names none ("").
const GeneralLane = "general"

// Lane is one lane: its name (what invitations and codes name) and its share of the admission rate.
type Lane struct {
	Name  string  `json:"name"`
	Share float64 `json:"share"`
}

// Lanes is a show's lanes in order, a fixed array so Settings stays comparable (the audit compares old and new);
// it reads and writes as a JSON list of its named entries.
type Lanes [MaxLanes]Lane

// List is the lanes set, in order (none: no lanes).
func (l Lanes) List() []Lane {
	n := 0
	for n < MaxLanes && l[n].Name != "" {
		n++
	}
	return l[:n:n]
}

// Count is how many lanes the queue has: at least one (the general lane).
func (l Lanes) Count() int { return max(len(l.List()), 1) }

// Index is the lane named name among l: the general lane's for "" and for a name l does not have (an invitation
// drawn before its lane was renamed away), 0 when no lanes are set.
func (l Lanes) Index(name string) int {
	list := l.List()
	general := 0
	for i, ln := range list {
		if ln.Name == name && name != "" {
			return i
		}
		if ln.Name == GeneralLane {
			general = i
		}
	}
	return general
}

// Has reports whether l has a lane named name.
func (l Lanes) Has(name string) bool {
	for _, ln := range l.List() {
		if ln.Name == name {
			return true
		}
	}
	return false
}

// String is the lanes' names joined by commas with their shares ("fanclub:0.7,general:0.3"), the waiting room's
// plain copy in the queue's cache (rediskey.QueueLanes); "" for no lanes.
func (l Lanes) String() string {
	var b strings.Builder
	for i, ln := range l.List() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(ln.Name + ":" + strconv.FormatFloat(ln.Share, 'f', -1, 64))
	}
	return b.String()
}

// ParseLanes reads String's form; malformed entries are skipped (the record holds the truth).
func ParseLanes(s string) Lanes {
	var out Lanes
	n := 0
	for _, e := range strings.Split(s, ",") {
		name, share, ok := strings.Cut(e, ":")
		v, err := strconv.ParseFloat(share, 64)
		if !ok || err != nil || name == "" || n == MaxLanes {
			continue
		}
		out[n] = Lane{Name: name, Share: v}
		n++
	}
	return out
}

// MarshalJSON writes the named lanes as a list ([] for none).
func (l Lanes) MarshalJSON() ([]byte, error) { return json.Marshal(l.List()) }

// UnmarshalJSON reads a list of at most MaxLanes lanes.
func (l *Lanes) UnmarshalJSON(b []byte) error {
	var list []Lane
	if err := json.Unmarshal(b, &list); err != nil {
		return err
	}
	if len(list) > MaxLanes {
		return fmt.Errorf("lanes: at most %d", MaxLanes)
	}
	*l = Lanes{}
	copy(l[:], list)
	return nil
}

var laneName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// Validate rejects lanes no tick can share by: names unique, of lower-case letters, digits and hyphens (1-32), one
// of them GeneralLane; shares in (0, 1] summing to 1 within 0.001.
func (l Lanes) Validate() error {
	list := l.List()
	if len(list) == 0 {
		for _, ln := range l {
			if ln != (Lane{}) {
				return fmt.Errorf("lanes: every lane needs a name")
			}
		}
		return nil
	}
	seen := map[string]bool{}
	sum := 0.0
	for i, ln := range list {
		switch {
		case !laneName.MatchString(ln.Name):
			return fmt.Errorf("lanes[%d].name must be 1-32 lower-case letters, digits or hyphens", i)
		case seen[ln.Name]:
			return fmt.Errorf("lanes[%d].name %q is not unique", i, ln.Name)
		case !(ln.Share > 0 && ln.Share <= 1):
			return fmt.Errorf("lanes[%d].share must be in (0, 1]", i)
		}
		seen[ln.Name] = true
		sum += ln.Share
	}
	for _, ln := range l[len(list):] {
		if ln != (Lane{}) {
			return fmt.Errorf("lanes[%d].name is required", len(list))
		}
	}
	if !seen[GeneralLane] {
		return fmt.Errorf("lanes must include a lane named %q, for fans with no invitation or code", GeneralLane)
	}
	if math.Abs(sum-1) > 0.001 {
		return fmt.Errorf("lanes' shares must sum to 1, not %g", sum)
	}
	return nil
}

// SameNames reports whether l and m have the same lanes in the same order (shares aside): a fan's lane, and so
// their line, follows from the names, so only a change of shares may be made while fans wait.
func (l Lanes) SameNames(m Lanes) bool {
	a, b := l.List(), m.List()
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name {
			return false
		}
	}
	return true
}
