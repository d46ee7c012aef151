package http

import (
	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/booking"
)

// contactRoutes adds the fan's contact: where their notifications go.
func (s *Server) contactRoutes(v1 fiber.Router) {
	if s.cfg.Contacts == nil {
		return
	}
	v1.Put("/me/contact", s.RequireUser, s.putContact)
	v1.Get("/me/contact", s.RequireUser, s.getContact)
	v1.Post("/me/contact/confirm", s.RequireUser, s.confirmContact)
}

// confirmContact confirms the fan's e-mail with the code mailed to it, body {"code"}.
func (s *Server) confirmContact(c *fiber.Ctx) error {
	var req struct {
		Code string `json:"code"`
	}
	if err := decode(c, &req); err != nil {
		return err
	}
	ct, err := s.cfg.Contacts.Confirm(c.UserContext(), UserID(c), req.Code)
	if err != nil {
		return err
	}
	return c.JSON(contactJSON(ct))
}

// contactJSON is a contact as answered.
func contactJSON(ct booking.Contact) fiber.Map {
	return fiber.Map{"email": ct.Email, "language": ct.Language, "name": ct.Name, "confirmed": ct.Confirmed}
}

// putContact records the guest fan's e-mail, body {"email","language"?,"name"?}; without a language, the
// request's Accept-Language is kept, the language their messages are written in; without a name, the one on
// record (their tickets print it, else the e-mail).
func (s *Server) putContact(c *fiber.Ctx) error {
	var req struct {
		Email    *string `json:"email"`
		Language string  `json:"language"`
		Name     string  `json:"name"`
	}
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Email == nil {
		return booking.Invalid("email is required")
	}
	if req.Language == "" {
		req.Language = pageLanguage(c)
	}
	ct, err := s.cfg.Contacts.Set(c.UserContext(), booking.Contact{UserID: UserID(c), Email: *req.Email,
		Language: req.Language, Name: req.Name})
	if err != nil {
		return err
	}
	return c.JSON(contactJSON(ct))
}

// getContact answers the fan's contact; 404 when they gave none.
func (s *Server) getContact(c *fiber.Ctx) error {
	ct, err := s.cfg.Contacts.Get(c.UserContext(), UserID(c))
	if err != nil {
		return err
	}
	return c.JSON(contactJSON(ct))
}
