package http

import (
	"encoding/base64"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/shared/problem"
)

// The door's routes for rotating codes (docs/TICKETS.md): a holder's fresh code and the material to make the
// next ones, a show's gate kit for door devices, and the scans those devices made offline.
func (s *Server) gateRoutes(v1 fiber.Router) {
	v1.Get("/tickets/:ticketId/code", s.RequireUser, s.holderCode)
	v1.Get("/shows/:showId/gate-kit", s.RequireStaff, s.gateKit)
	v1.Post("/shows/:showId/gate-scans", s.RequireStaff, s.gateScans)
}

var b64url = base64.RawURLEncoding

// holderCodeJSON is GET /api/v1/tickets/{id}/code.
type holderCodeJSON struct {
	Code                 string    `json:"code"`
	ValidUntil           time.Time `json:"validUntil"`
	RotatesEverySeconds  int       `json:"rotatesEverySeconds"`
	Certificate          string    `json:"certificate"`
	CertificateSignature string    `json:"certificateSignature"`
	HolderKey            string    `json:"holderKey"`
	ServerTime           time.Time `json:"serverTime"`
}

func (s *Server) holderCode(c *fiber.Ctx) error {
	id, err := pathID(c, "ticketId", "ticket")
	if err != nil {
		return err
	}
	hc, err := s.cfg.Checkout.HolderCode(c.UserContext(), id, UserID(c))
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(holderCodeJSON{Code: hc.Code, ValidUntil: hc.ValidUntil,
		RotatesEverySeconds: int(hc.RotatesEvery / time.Second), Certificate: b64url.EncodeToString(hc.Certificate),
		CertificateSignature: b64url.EncodeToString(hc.CertSig), HolderKey: b64url.EncodeToString(hc.HolderSeed),
		ServerTime: hc.ServerTime})
}

type gateKeyJSON struct {
	KID string `json:"kid"`
	X   string `json:"x"`
}

type gateTicketJSON struct {
	TicketID  string `json:"ticketId"`
	SeatID    string `json:"seatId"`
	Category  string `json:"category"`
	CheckedIn bool   `json:"checkedIn"`
}

type gateKitJSON struct {
	ShowID              string              `json:"showId"`
	Title               string              `json:"title"`
	TicketCodes         booking.TicketCodes `json:"ticketCodes"`
	GeneratedAt         time.Time           `json:"generatedAt"`
	Keys                []gateKeyJSON       `json:"keys"`
	MaxAgeSeconds       int                 `json:"maxAgeSeconds"`
	SkewSeconds         int                 `json:"skewSeconds"`
	RotatesEverySeconds int                 `json:"rotatesEverySeconds"`
	Tickets             []gateTicketJSON    `json:"tickets"`
}

func (s *Server) gateKit(c *fiber.Ctx) error {
	id, err := pathID(c, "showId", "show")
	if err != nil {
		return err
	}
	k, err := s.cfg.Checkout.GateKit(c.UserContext(), id)
	if err != nil {
		return err
	}
	out := gateKitJSON{ShowID: k.ShowID, Title: k.Title, TicketCodes: k.Codes, GeneratedAt: k.GeneratedAt,
		Keys: make([]gateKeyJSON, len(k.Keys)), MaxAgeSeconds: int(k.MaxAge / time.Second),
		SkewSeconds: int(k.Skew / time.Second), RotatesEverySeconds: int(k.RotateEvery / time.Second),
		Tickets: make([]gateTicketJSON, len(k.Tickets))}
	for i, key := range k.Keys {
		out.Keys[i] = gateKeyJSON{KID: key.ID, X: b64url.EncodeToString(key.Key)}
	}
	for i, t := range k.Tickets {
		out.Tickets[i] = gateTicketJSON(t)
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(out)
}

type gateScanJSON struct {
	Code      string    `json:"code"`
	ScannedAt time.Time `json:"scannedAt"`
}

type gateScansRequest struct {
	DeviceID string         `json:"deviceId"`
	Scans    []gateScanJSON `json:"scans"`
}

// scanResultJSON is one scan's answer; a refused scan says why in reason (a problem type's slug) and detail.
type scanResultJSON struct {
	TicketID    string             `json:"ticketId"`
	Status      booking.ScanStatus `json:"status"`
	FirstDevice string             `json:"firstDevice,omitempty"`
	FirstAt     *time.Time         `json:"firstAt,omitempty"`
	Reason      string             `json:"reason,omitempty"`
	Detail      string             `json:"detail,omitempty"`
}

func (s *Server) gateScans(c *fiber.Ctx) error {
	id, err := pathID(c, "showId", "show")
	if err != nil {
		return err
	}
	var req gateScansRequest
	if err := decodeStrict(c, &req); err != nil {
		return err
	}
	scans := make([]booking.GateScan, len(req.Scans))
	for i, sc := range req.Scans {
		scans[i] = booking.GateScan(sc)
	}
	rs, err := s.cfg.Checkout.GateScans(c.UserContext(), id, req.DeviceID, scans)
	if err != nil {
		return err
	}
	out := make([]scanResultJSON, len(rs))
	for i, r := range rs {
		out[i] = scanResultJSON{TicketID: r.TicketID, Status: r.Status, FirstDevice: r.FirstDevice}
		if !r.FirstAt.IsZero() {
			at := r.FirstAt
			out[i].FirstAt = &at
		}
		if r.Err != nil {
			p := s.toProblem(c, r.Err)
			out[i].Reason, out[i].Detail = strings.TrimPrefix(p.Type, problem.TypeBase), p.Detail
		}
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"results": out})
}

type sightingJSON struct {
	DeviceID string    `json:"deviceId"`
	At       time.Time `json:"at"`
}

type gateConflictJSON struct {
	TicketID string       `json:"ticketId"`
	SeatID   string       `json:"seatId"`
	First    sightingJSON `json:"first"`
	Second   sightingJSON `json:"second"`
}

func (s *Server) gateConflicts(c *fiber.Ctx) error {
	id, err := pathID(c, "showId", "show")
	if err != nil {
		return err
	}
	cs, err := s.cfg.Checkout.GateConflicts(c.UserContext(), id)
	if err != nil {
		return err
	}
	out := make([]gateConflictJSON, len(cs))
	for i, g := range cs {
		out[i] = gateConflictJSON{TicketID: g.TicketID, SeatID: g.SeatID, First: sightingJSON(g.First),
			Second: sightingJSON(g.Second)}
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"conflicts": out})
}
