package http

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/session"
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
}

type settingsOut struct {
	admission.Settings
	waitroom.Counts
}

func (h *Handler) putSettings(c *fiber.Ctx) error {
	show, err := h.adminShow(c)
	if err != nil {
		return err
	}
	var in settingsJSON
	if err := json.Unmarshal(c.Body(), &in); err != nil {
		return fmt.Errorf("%w: the body must be a JSON object of queue settings", errBadJSON)
	}
	old, now, err := h.svc.UpdateSettings(c.UserContext(), show, func(st admission.Settings) (admission.Settings, error) {
		if in.Enabled != nil {
			st.Enabled = *in.Enabled
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
		if len(in.BotProtection) > 0 && string(in.BotProtection) != "null" {
			if err := json.Unmarshal(in.BotProtection, &st.Bot); err != nil {
				return st, fmt.Errorf("%w: botProtection must be an object of bot settings: %v", errValidation, err)
			}
		}
		if err := st.Validate(); err != nil {
			return st, fmt.Errorf("%w: %v", errValidation, err)
		}
		return st, nil
	})
	if err != nil {
		return err
	}
	if old != now {
		h.audit(c, "queue.settings", show, old, now)
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(now)
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
	return c.JSON(settingsOut{st, counts})
}
