package http

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/session"
	"github.com/flashseat/flashseat/shared/strictjson"
	"github.com/flashseat/flashseat/waitroom"
)

// The operators' queue settings: who may change them, and the settings routes.

func (h *Handler) admin(c *fiber.Ctx) error {
	got := session.Bearer(c)
	if got == "" {
		return errAdminMissing
	}
	if h.cfg.AdminToken == "" || subtle.ConstantTimeCompare([]byte(got), []byte(h.cfg.AdminToken)) != 1 {
		return errAdminWrong
	}
	return nil
}

// operatorJSON reads an operator's body, or its member at path, into v (shared/strictjson): a member v has no
// field for is errValidation naming its path (a misspelt setting must not answer 200 and change nothing);
// anything else malformed is kind, described by shape.
func operatorJSON(path string, b []byte, v any, kind error, shape string) error {
	err := strictjson.UnmarshalAt(path, b, v)
	var ue *strictjson.UnknownFieldError
	switch {
	case errors.As(err, &ue):
		return fmt.Errorf("%w: %w", errValidation, ue)
	case err != nil:
		return fmt.Errorf("%w: %s", kind, shape)
	}
	return nil
}

// settingsJSON is PUT's body: every member optional, absent ones keep their current value.
type settingsJSON struct {
	Enabled         *bool    `json:"enabled"`
	Paused          *bool    `json:"paused"`
	AdmitPerSecond  *float64 `json:"admitPerSecond"`
	MaxActive       *int     `json:"maxActive"`
	TokenTTLSeconds *int     `json:"tokenTtlSeconds"`
	TurnHoldSeconds *int     `json:"turnHoldSeconds"`
	// BotProtection's members are each optional too: json.Unmarshal writes only those present onto the
	// settings in force (apply).
	BotProtection json.RawMessage `json:"botProtection"`
	// Page's members (message, language) likewise.
	Page json.RawMessage `json:"page"`
	// Mode is "off", "always" or "threshold"; enabled alone still means "always" (true) or "off" (false).
	Mode                       *string `json:"mode"`
	ActiveUsersThreshold       *int    `json:"activeUsersThreshold"`
	NewUsersPerMinuteThreshold *int    `json:"newUsersPerMinuteThreshold"`
	CooldownSeconds            *int    `json:"cooldownSeconds"`
	// Autotune's members are each optional, as botProtection's.
	Autotune json.RawMessage `json:"autotune"`
	// WhenStoreDown's members (policy, admitPerSecond) likewise.
	WhenStoreDown json.RawMessage `json:"whenStoreDown"`
	// Partitions splits the queue over that many Redis hash slots (1-64): only while nobody waits.
	Partitions *int `json:"partitions"`
	// Lanes share the rate by weight ([{"name","share"}], admission.Lanes): names only while nobody waits.
	Lanes json.RawMessage `json:"lanes"`
	// Access is "open", "registered" or "invited" (admission.Tuning.Access).
	Access *string `json:"access"`
}

// settingsOut is GET's answer: the settings, the queue's figures, and the rate in force under the name autotune's
// figures have (it is the rate autotune last set while autotune is on).
type settingsOut struct {
	admission.Settings
	waitroom.Counts
	AdmitPerSecondNow float64 `json:"admitPerSecondNow"`
	// Partitions is the settings' count, 1 when never set (the embedded field's 0).
	Partitions int `json:"partitions"`
	// Lanes is the settings' lanes with each lane's figures (Counts.Lanes), in the settings' place.
	Lanes []waitroom.LaneCounts `json:"lanes"`
}

// settingsView is PUT's answer: the settings with their partition count as GET answers it.
type settingsView struct {
	admission.Settings
	Partitions int `json:"partitions"`
}

// applyMode sets st's mode from the body: mode wins, enabled alone picks "always" or "off", and an enabled that
// contradicts the mode given with it is refused.
func (in settingsJSON) applyMode(st admission.Settings) (admission.Settings, error) {
	switch {
	case in.Mode != nil:
		if !admission.ValidMode(*in.Mode) {
			return st, fmt.Errorf("%w: mode must be %q, %q or %q", errValidation, admission.ModeOff,
				admission.ModeAlways, admission.ModeThreshold)
		}
		if in.Enabled != nil && *in.Enabled != (*in.Mode != admission.ModeOff) {
			return st, fmt.Errorf("%w: enabled %t contradicts mode %q", errValidation, *in.Enabled, *in.Mode)
		}
		st.Mode = *in.Mode
	case in.Enabled != nil:
		st.Mode = admission.ModeOff
		if *in.Enabled {
			st.Mode = admission.ModeAlways
		}
	}
	st.Enabled = st.QueueMode() != admission.ModeOff
	return st, nil
}

// applyTuning sets the threshold limits and autotune from the body.
func (in settingsJSON) applyTuning(st admission.Settings) (admission.Settings, error) {
	if in.ActiveUsersThreshold != nil {
		st.ActiveUsersThreshold = *in.ActiveUsersThreshold
	}
	if in.NewUsersPerMinuteThreshold != nil {
		st.NewUsersPerMinuteThreshold = *in.NewUsersPerMinuteThreshold
	}
	if in.CooldownSeconds != nil {
		st.CooldownSeconds = *in.CooldownSeconds
	}
	if len(in.Autotune) > 0 && string(in.Autotune) != "null" {
		was := st.Autotune
		if err := operatorJSON("autotune", in.Autotune, &st.Autotune, errValidation,
			"autotune must be an object of autotune settings"); err != nil {
			return st, err
		}
		if was.Enabled && !st.Autotune.Enabled {
			st.AutotuneReason = "" // switched off: the rate it set stays, now the operator's
		}
	}
	if in.AdmitPerSecond != nil {
		st.AutotuneReason = "" // the operator set the rate (autotune, if on, moves it again from there)
	}
	if len(in.WhenStoreDown) > 0 && string(in.WhenStoreDown) != "null" {
		if err := operatorJSON("whenStoreDown", in.WhenStoreDown, &st.WhenStoreDown, errValidation,
			`whenStoreDown must be an object such as {"policy":"trickle","admitPerSecond":2}`); err != nil {
			return st, err
		}
	}
	return st, nil
}

// applyLanes sets the lanes from the body (null or []: none). A fan's lane, and so their line, follows from the
// lanes' names: a change of names, their order or their count while fans wait or hold admissions is refused, as
// a change of partitions is (fans would be looked for on lines they are not on); a change of shares alone moves
// nobody and is taken at any time.
func (in settingsJSON) applyLanes(st admission.Settings, counts waitroom.Counts) (admission.Settings, error) {
	if len(in.Lanes) == 0 {
		return st, nil
	}
	var list []admission.Lane
	if string(in.Lanes) != "null" {
		if err := operatorJSON("lanes", in.Lanes, &list, errValidation,
			`lanes must be a list such as [{"name":"fanclub","share":0.7},{"name":"general","share":0.3}]`); err != nil {
			return st, err
		}
	}
	if len(list) > admission.MaxLanes {
		return st, fmt.Errorf("%w: lanes: at most %d", errValidation, admission.MaxLanes)
	}
	var next admission.Lanes
	copy(next[:], list)
	if !next.SameNames(st.Lanes) && (counts.Waiting > 0 || counts.Active > 0) {
		return st, fmt.Errorf("%w: lanes cannot be added, removed, renamed or reordered while %d fans wait and "+
			"%d hold admissions: set them before the sale, or once the queue is empty (shares may change)",
			errValidation, counts.Waiting, counts.Active)
	}
	st.Lanes = next
	return st, nil
}

func (h *Handler) putSettings(c *fiber.Ctx) error {
	show, err := h.adminShow(c)
	if err != nil {
		return err
	}
	var in settingsJSON
	if err := operatorJSON("", c.Body(), &in, errBadJSON, "the body must be a JSON object of queue settings"); err != nil {
		return err
	}
	var counts waitroom.Counts
	if in.Partitions != nil || len(in.Lanes) > 0 {
		if _, counts, err = h.svc.Settings(c.UserContext(), show); err != nil {
			return err
		}
	}
	old, now, err := h.svc.UpdateSettings(c.UserContext(), show, func(st admission.Settings) (admission.Settings, error) {
		st, err := in.applyMode(st)
		if err != nil {
			return st, err
		}
		if st, err = in.applyTuning(st); err != nil {
			return st, err
		}
		if in.Paused != nil {
			st.Paused = *in.Paused
		}
		if in.AdmitPerSecond != nil {
			st.AdmitPerSecond = *in.AdmitPerSecond
		}
		if in.MaxActive != nil {
			st.MaxActive = *in.MaxActive
		}
		if in.TokenTTLSeconds != nil {
			st.TokenTTLSeconds = *in.TokenTTLSeconds
		}
		if in.TurnHoldSeconds != nil {
			st.TurnHoldSeconds = *in.TurnHoldSeconds
		}
		if in.Access != nil {
			st.Access = *in.Access
		}
		if len(in.BotProtection) > 0 && string(in.BotProtection) != "null" {
			if err := operatorJSON("botProtection", in.BotProtection, &st.Bot, errValidation,
				"botProtection must be an object of bot settings"); err != nil {
				return st, err
			}
		}
		if len(in.Page) > 0 && string(in.Page) != "null" {
			if err := operatorJSON("page", in.Page, &st.Page, errValidation,
				`page must be an object such as {"message":"...","language":"hi"}`); err != nil {
				return st, err
			}
		}
		if in.Partitions != nil {
			if *in.Partitions < 1 {
				return st, fmt.Errorf("%w: partitions must be in [1, 64]", errValidation)
			}
			if *in.Partitions != st.Lines() && (counts.Waiting > 0 || counts.Active > 0) {
				// A fan's partition follows from the count: changed under a live line, fans would be looked
				// for where they are not, and the lines' admissions would drop out of the active cap.
				return st, fmt.Errorf("%w: partitions cannot change from %d while %d fans wait and %d hold "+
					"admissions: set it before the sale, or once the queue is empty", errValidation, st.Lines(),
					counts.Waiting, counts.Active)
			}
			st.Partitions = *in.Partitions
		}
		if st, err = in.applyLanes(st, counts); err != nil {
			return st, err
		}
		if err := st.Validate(); err != nil {
			return st, fmt.Errorf("%w: %v", errValidation, err)
		}
		return st, nil
	})
	if errors.Is(err, admission.ErrUnavailable) && old != now {
		// Recorded, but the cache could not be told (Redis down): the change is in force for whatever reads the
		// record (the store-down policy does), so it is audited now; the operator's retry changes nothing more.
		h.audit(c, "queue.settings", show, old, now)
	}
	if err != nil {
		return err
	}
	if old != now {
		h.audit(c, "queue.settings", show, old, now)
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(settingsView{Settings: now, Partitions: now.Lines()})
}

func (h *Handler) getSettings(c *fiber.Ctx) error {
	show, err := h.adminShow(c)
	if err != nil {
		return err
	}
	st, counts, err := h.svc.Settings(c.UserContext(), show)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(settingsOut{Settings: st, Counts: counts, AdmitPerSecondNow: st.AdmitPerSecond,
		Partitions: st.Lines(), Lanes: counts.Lanes})
}
