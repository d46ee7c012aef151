package admission

import (
	"errors"
	"fmt"

	"github.com/flashseat/flashseat/shared/rediskey"
)

// A show's queue mode: when its fans wait in line.
const (
	// ModeOff: no queue; the gate lets every request pass.
	ModeOff = "off"
	// ModeAlways: every fan waits in line and is admitted at the operator's rate (what "enabled" meant before
	// modes existed).
	ModeAlways = "always"
	// ModeThreshold: fans are admitted at once, without waiting, while the show's live admissions and its
	// arrivals over the last minute are both under their thresholds; when either reaches its threshold the
	// queue engages (atomically in Redis, so on every replica at once) and fans from then on wait in line. It
	// disengages only when the line is empty and both figures have stayed under for CooldownSeconds. A show
	// whose sale has not opened still queues (the pre-opening draw), as in ModeAlways.
	ModeThreshold = "threshold"
)

// ValidMode reports whether m names a mode.
func ValidMode(m string) bool { return m == ModeOff || m == ModeAlways || m == ModeThreshold }

// QueueMode is the mode in force: Mode, or for settings written before modes existed (Mode empty) the one Enabled
// meant.
func (s Settings) QueueMode() string {
	if s.Mode != "" {
		return s.Mode
	}
	if s.Enabled {
		return ModeAlways
	}
	return ModeOff
}

// Autotune lets the edge set a show's admission rate itself, within [MinAdmitPerSecond, MaxAdmitPerSecond], from
// what booking reports (the p99 of holds against TargetHoldP99Ms, the share of 5xx and 503 answers, the payment
// breaker, the seats left). Each change it makes is a settings change like an operator's, recorded and audited as
// made by "autotune"; switching it off keeps the rate it last set.
type Autotune struct {
	Enabled           bool    `json:"enabled"`
	MinAdmitPerSecond float64 `json:"minAdmitPerSecond"`
	MaxAdmitPerSecond float64 `json:"maxAdmitPerSecond"`
	TargetHoldP99Ms   int     `json:"targetHoldP99Ms"`
}

// DefaultAutotune is off, with bounds an operator would start from.
func DefaultAutotune() Autotune {
	return Autotune{MinAdmitPerSecond: 1, MaxAdmitPerSecond: 100, TargetHoldP99Ms: 500}
}

// Validate rejects bounds autotune cannot work within.
func (a Autotune) Validate() error {
	switch {
	case a.MinAdmitPerSecond <= 0 || a.MinAdmitPerSecond > 100000:
		return errors.New("autotune.minAdmitPerSecond must be in (0, 100000]")
	case a.MaxAdmitPerSecond < a.MinAdmitPerSecond || a.MaxAdmitPerSecond > 100000:
		return errors.New("autotune.maxAdmitPerSecond must be in [minAdmitPerSecond, 100000]")
	case a.TargetHoldP99Ms < 1 || a.TargetHoldP99Ms > 600000:
		return errors.New("autotune.targetHoldP99Ms must be in [1, 600000]")
	}
	return nil
}

// Tuning is the part of a show's settings that lets the queue run itself: the threshold mode's limits and
// autotune. It is stored as one JSON value (PostgreSQL's tuning column, the cache's tuning field), so a field
// added later takes its default on rows written before it.
type Tuning struct {
	// ActiveUsersThreshold is the live admissions at which threshold mode engages; while engaged, the queue
	// admits only up to it (and MaxActive).
	ActiveUsersThreshold int `json:"activeUsersThreshold"`
	// NewUsersPerMinuteThreshold is the arrivals over the last minute at which threshold mode engages; 0: arrivals
	// never engage it.
	NewUsersPerMinuteThreshold int `json:"newUsersPerMinuteThreshold"`
	// CooldownSeconds is how long the line must stay empty and both figures under before the queue disengages.
	CooldownSeconds int      `json:"cooldownSeconds"`
	Autotune        Autotune `json:"autotune"`
	// AutotuneReason says why autotune set the rate in force (empty: an operator set it).
	AutotuneReason string `json:"autotuneReason"`
	// WhenStoreDown is what the queue does while its store cannot be reached (storedown.go). Here, in the
	// tuning's JSON, so both stores carry it and rows written before it read as closed.
	WhenStoreDown StoreDown `json:"whenStoreDown"`
	// Partitions is how many partitions the show's queue is split over, each on a hash slot of its own, so one
	// show's queue is served by several Redis masters (rediskey.Line); 0 and 1 are one queue, as always. It
	// may change only while nobody waits (the waiting room refuses it otherwise): a fan's partition follows
	// from the count. Here, in the tuning's JSON, so both stores carry it without a column of its own.
	Partitions int `json:"partitions"`
	// Lanes share the admission rate between queues of their own (lane.go); none: one general lane. Each lane
	// has Partitions lines, so lanes times partitions is at most rediskey.MaxPartitions.
	Lanes Lanes `json:"lanes"`
	// Access is who may join (access.go): AccessOpen (also ""), AccessRegistered or AccessInvited. Here, in
	// the tuning's JSON, as partitions are.
	Access string `json:"access"`
}

// DefaultTuning applies to a show whose operator has set none.
func DefaultTuning() Tuning {
	return Tuning{ActiveUsersThreshold: 200, NewUsersPerMinuteThreshold: 1000, CooldownSeconds: 60,
		Autotune: DefaultAutotune(), WhenStoreDown: DefaultStoreDown(), Access: AccessOpen}
}

// Validate rejects limits no queue can run with.
func (t Tuning) Validate() error {
	switch {
	case t.ActiveUsersThreshold < 1 || t.ActiveUsersThreshold > 10000000:
		return errors.New("activeUsersThreshold must be in [1, 10000000]")
	case t.NewUsersPerMinuteThreshold < 0 || t.NewUsersPerMinuteThreshold > 100000000:
		return errors.New("newUsersPerMinuteThreshold must be in [0, 100000000]")
	case t.CooldownSeconds < 0 || t.CooldownSeconds > 86400:
		return errors.New("cooldownSeconds must be in [0, 86400]")
	case t.Partitions < 0 || t.Partitions > rediskey.MaxPartitions:
		return fmt.Errorf("partitions must be in [1, %d]", rediskey.MaxPartitions)
	case !ValidAccess(t.Access):
		return fmt.Errorf("access must be %q, %q or %q", AccessOpen, AccessRegistered, AccessInvited)
	}
	if err := t.Lanes.Validate(); err != nil {
		return err
	}
	if n := t.LineCount(); n > rediskey.MaxPartitions {
		return fmt.Errorf("lanes: %d lanes of %d partitions are %d lines, more than %d", t.Lanes.Count(),
			t.Lines(), n, rediskey.MaxPartitions)
	}
	if err := t.WhenStoreDown.Validate(); err != nil {
		return err
	}
	return t.Autotune.Validate()
}

// Lines is how many partitions the queue has: at least one.
func (t Tuning) Lines() int { return max(t.Partitions, 1) }

// LineCount is how many lines the queue has in all: each lane's partitions (rediskey.QueuePartitions holds it,
// so a fan routed by another count is sent round again).
func (t Tuning) LineCount() int { return t.Lanes.Count() * t.Lines() }

// settle makes next's Mode and Enabled agree after a change from cur: a caller that changed only Enabled (a
// script of before modes, a test) switched between "always" and "off"; one that set Mode set Enabled with it.
func settle(cur, next Settings) (Settings, error) {
	switch {
	case next.Mode == "":
		next.Mode = next.QueueMode()
	case next.Mode == cur.Mode && next.Enabled != cur.Enabled:
		next.Mode = ModeOff
		if next.Enabled {
			next.Mode = ModeAlways
		}
	}
	if !ValidMode(next.Mode) {
		return next, fmt.Errorf("mode must be %q, %q or %q", ModeOff, ModeAlways, ModeThreshold)
	}
	next.Enabled = next.Mode != ModeOff
	return next, nil
}
