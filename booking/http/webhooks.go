package http

import (
	"encoding/json"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/webhook"
)

// webhookRoutes adds the operators' webhook endpoints when webhooks are configured. They carry their own admin
// check: registered before the admin group's middleware, which would otherwise run for them too.
func (s *Server) webhookRoutes() {
	if s.cfg.Webhooks == nil {
		return
	}
	a := s.app
	a.Post("/admin/v1/webhooks", s.RequireAdmin, s.createWebhook)
	a.Get("/admin/v1/webhooks", s.RequireAdmin, s.listWebhooks)
	a.Delete("/admin/v1/webhooks/:webhookId", s.RequireAdmin, s.deleteWebhook)
	a.Post("/admin/v1/webhooks/:webhookId/roll-secret", s.RequireAdmin, s.rollWebhookSecret)
	a.Get("/admin/v1/webhooks/:webhookId/deliveries", s.RequireAdmin, s.webhookDeliveries)
	a.Post("/admin/v1/webhooks/:webhookId/deliveries/:deliveryId/replay", s.RequireAdmin, s.replayDelivery)
}

func endpointJSON(e webhook.Endpoint) fiber.Map {
	m := fiber.Map{"id": e.ID, "url": e.URL, "events": nonNil(e.Types), "createdAt": e.CreatedAt.UTC().Format(time.RFC3339)}
	if e.ShowID != "" {
		m["showId"] = e.ShowID
	}
	if !e.PreviousSecretExpiresAt.IsZero() {
		m["previousSecretExpiresAt"] = e.PreviousSecretExpiresAt.UTC().Format(time.RFC3339)
	}
	return m
}

func deliveryJSON(d webhook.Delivery) fiber.Map {
	m := fiber.Map{"id": d.ID, "eventId": d.EventID, "eventType": d.EventType, "showId": d.ShowID, "status": d.Status,
		"attempts": d.Attempts, "createdAt": d.CreatedAt.Format(time.RFC3339)}
	if json.Valid(d.Body) {
		m["body"] = json.RawMessage(d.Body)
	}
	if d.LastStatus != 0 {
		m["lastStatus"] = d.LastStatus
	}
	if d.LastError != "" {
		m["lastError"] = d.LastError
	}
	if d.Status == webhook.Pending {
		m["nextAttemptAt"] = d.NextAt.Format(time.RFC3339)
	}
	if !d.DeliveredAt.IsZero() {
		m["deliveredAt"] = d.DeliveredAt.Format(time.RFC3339)
	}
	return m
}

// createWebhook registers an endpoint: body {"url","showId"?,"events"?}; 201 with the endpoint and its signing
// secret, shown this once.
func (s *Server) createWebhook(c *fiber.Ctx) error {
	var req struct {
		URL    string   `json:"url"`
		ShowID string   `json:"showId"`
		Events []string `json:"events"`
	}
	if err := decodeStrict(c, &req); err != nil {
		return err
	}
	if req.URL == "" {
		return booking.Invalid("url is required")
	}
	if req.ShowID != "" {
		if _, err := s.svc.Show(c.UserContext(), req.ShowID); err != nil {
			return err
		}
	}
	e, err := s.cfg.Webhooks.Register(c.UserContext(), webhook.Registration{URL: req.URL, ShowID: req.ShowID, Types: req.Events})
	if err != nil {
		return err
	}
	m := endpointJSON(e)
	m["secret"] = e.Secret
	return c.Status(fiber.StatusCreated).JSON(m)
}

// rollWebhookSecret gives an endpoint a new signing secret: body {"graceSeconds"?} (default a day: how long the
// old secret keeps signing beside the new one; 0 retires it at once); 200 with the endpoint and its new secret,
// shown this once.
func (s *Server) rollWebhookSecret(c *fiber.Ctx) error {
	req := struct {
		GraceSeconds *int64 `json:"graceSeconds"`
	}{}
	if len(c.Body()) > 0 {
		if err := decodeStrict(c, &req); err != nil {
			return err
		}
	}
	grace := 24 * time.Hour
	if req.GraceSeconds != nil {
		if *req.GraceSeconds < 0 || *req.GraceSeconds > int64(webhook.MaxSecretGrace.Seconds()) {
			return booking.Unprocessable("graceSeconds must be between 0 and %d", int64(webhook.MaxSecretGrace.Seconds()))
		}
		grace = time.Duration(*req.GraceSeconds) * time.Second
	}
	e, err := s.cfg.Webhooks.RollSecret(c.UserContext(), string([]byte(c.Params("webhookId"))), grace)
	if err != nil {
		return err
	}
	m := endpointJSON(e)
	m["secret"] = e.Secret
	return c.JSON(m)
}

func (s *Server) listWebhooks(c *fiber.Ctx) error {
	es, err := s.cfg.Webhooks.Endpoints(c.UserContext())
	if err != nil {
		return err
	}
	out := make([]fiber.Map, 0, len(es))
	for _, e := range es {
		out = append(out, endpointJSON(e))
	}
	return c.JSON(fiber.Map{"webhooks": out})
}

func (s *Server) deleteWebhook(c *fiber.Ctx) error {
	if err := s.cfg.Webhooks.Delete(c.UserContext(), string([]byte(c.Params("webhookId")))); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// webhookDeliveries lists an endpoint's latest deliveries (?limit=, default 50, at most 500), newest first.
func (s *Server) webhookDeliveries(c *fiber.Ctx) error {
	limit := c.QueryInt("limit", 50)
	if limit < 1 || limit > 500 {
		return booking.Invalid("limit must be between 1 and 500")
	}
	ds, err := s.cfg.Webhooks.Deliveries(c.UserContext(), string([]byte(c.Params("webhookId"))), limit)
	if err != nil {
		return err
	}
	out := make([]fiber.Map, 0, len(ds))
	for _, d := range ds {
		out = append(out, deliveryJSON(d))
	}
	return c.JSON(fiber.Map{"deliveries": out})
}

// replayDelivery sends a delivery again now, with a fresh round of attempts: 202 and the delivery, PENDING.
func (s *Server) replayDelivery(c *fiber.Ctx) error {
	d, err := s.cfg.Webhooks.Replay(c.UserContext(), string([]byte(c.Params("webhookId"))),
		string([]byte(c.Params("deliveryId"))))
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusAccepted).JSON(deliveryJSON(d))
}
