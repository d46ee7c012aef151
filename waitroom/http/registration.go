package http

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/shared/audit"
	"github.com/flashseat/flashseat/waitroom"
)

// Verified-fan sales (waitroom/registration.go, wave.go): a fan's registration, the operator's invitation waves,
// and the waves' published material, from which anyone can recompute who each wave invited.

// register answers POST /api/v1/shows/{showId}/registration {"proof"?,"humanToken"?}: 201 REGISTERED, or 200
// with the registration the fan already has, or the guard's refusal as a join gets it.
func (h *Handler) register(c *fiber.Ctx) error {
	_, r, _, err := h.entry(c)
	if err != nil {
		return err
	}
	reg, created, err := h.svc.Register(c.UserContext(), r)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	if created {
		c.Status(http.StatusCreated)
	}
	return c.JSON(reg)
}

// registration answers GET /api/v1/shows/{showId}/registration: the fan's status (REGISTERED, INVITED with the
// lane, NOT_INVITED), or 404 not registered.
func (h *Handler) registration(c *fiber.Ctx) error {
	show, err := showID(c)
	if err != nil {
		return err
	}
	user, err := h.user(c)
	if err != nil {
		return err
	}
	reg, err := h.svc.RegistrationOf(c.UserContext(), show, user)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(reg)
}

// myRegistrations answers GET /api/v1/me/registrations: the fan's registrations of every show, newest first.
func (h *Handler) myRegistrations(c *fiber.Ctx) error {
	user, err := h.user(c)
	if err != nil {
		return err
	}
	rs, err := h.svc.Registrations(c.UserContext(), user)
	if err != nil {
		return err
	}
	if rs == nil {
		rs = []waitroom.Registration{}
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"registrations": rs})
}

// waveJSON is POST .../invitations's body.
type waveJSON struct {
	Count *int   `json:"count"`
	Lane  string `json:"lane"`
}

// drawWave answers POST /admin/v1/shows/{showId}/invitations {"count","lane"?} with 201 and the wave drawn.
func (h *Handler) drawWave(c *fiber.Ctx) error {
	show, err := h.adminShow(c)
	if err != nil {
		return err
	}
	var in waveJSON
	if err := operatorJSON("", c.Body(), &in, errBadJSON, `the body must be a JSON object such as {"count":1000,"lane":""}`); err != nil {
		return err
	}
	if in.Count == nil {
		return fmt.Errorf("%w: count is required (how many fans to invite)", errValidation)
	}
	w, err := h.svc.DrawWave(c.UserContext(), show, waitroom.WaveRequest{Count: *in.Count, Lane: in.Lane,
		By: audit.Actor(c.Get(audit.OperatorHeader))})
	if errors.Is(err, waitroom.ErrInvalid) {
		return fmt.Errorf("%w: %v", errValidation, err) // the body's values, not the path's
	}
	if err != nil {
		return err
	}
	h.audit(c, "invitation.wave", show, nil, w)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Status(http.StatusCreated).JSON(w)
}

// wavesJSON lists a show's waves: to the operator (with who drew each) and, published, to anyone.
type wavesJSON struct {
	ShowID string          `json:"showId"`
	Waves  []waitroom.Wave `json:"waves"`
	Recipe string          `json:"recipe"`
}

// listWaves answers GET /admin/v1/shows/{showId}/invitations.
func (h *Handler) listWaves(c *fiber.Ctx) error {
	show, err := h.adminShow(c)
	if err != nil {
		return err
	}
	return h.sendWaves(c, show, true)
}

// publishedWaves answers GET /queue/{showId}/waves: every wave's commitment, and once drawn its seed and digests.
func (h *Handler) publishedWaves(c *fiber.Ctx) error {
	show, err := showID(c)
	if err != nil {
		return err
	}
	return h.sendWaves(c, show, false)
}

func (h *Handler) sendWaves(c *fiber.Ctx, show string, operator bool) error {
	ws, err := h.svc.Waves(c.UserContext(), show)
	if err != nil {
		return err
	}
	if ws == nil {
		ws = []waitroom.Wave{}
	}
	if !operator {
		for i := range ws {
			ws[i].DrawnBy = ""
		}
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(wavesJSON{ShowID: show, Waves: ws, Recipe: waitroom.WaveRecipe})
}

// waveEligible answers GET /queue/{showId}/waves/{waveId}/eligible: the hashes the wave drew from, one hex hash
// a line, ascending (WaveRecipe).
func (h *Handler) waveEligible(c *fiber.Ctx) error {
	show, err := showID(c)
	if err != nil {
		return err
	}
	wave, err := strconv.Atoi(c.Params("waveId"))
	if err != nil || wave < 1 {
		return fmt.Errorf("%w: waveId must be a wave's number", waitroom.ErrInvalid)
	}
	hs, err := h.svc.WaveEligible(c.UserContext(), show, wave)
	if err != nil {
		return err
	}
	var sb strings.Builder
	sb.Grow(len(hs) * 65)
	for i, x := range hs {
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(hex.EncodeToString(x[:]))
	}
	c.Set(fiber.HeaderContentType, "text/plain; charset=utf-8")
	c.Set(fiber.HeaderCacheControl, "public, max-age=60") // a drawn wave's list never changes
	return c.SendString(sb.String())
}
