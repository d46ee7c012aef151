package booking

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flashseat/flashseat/booking/ticket"
	"github.com/flashseat/flashseat/shared/token"
)

// Codes at the door (docs/TICKETS.md). A show's operator picks static codes (one signed code per ticket, on its
// PDF and pass) or rotating ones: the holder's page is given its ticket's certificate and holder key (HolderCode)
// and stamps a code every 15 s; a door device checks codes alone with the show's gate kit (GateKit), and sends
// what it admitted offline when it is back (GateScans): the earliest scan checks the ticket in, a later one from
// another device is a conflict the console lists (GateConflicts).

// TicketCodes is which codes a show's tickets carry.
type TicketCodes string

// The two kinds; a show without a word on it has static codes.
const (
	CodesStatic   TicketCodes = "static"
	CodesRotating TicketCodes = "rotating"
)

// Validate refuses anything but the two kinds.
func (c TicketCodes) Validate() error {
	if c != CodesStatic && c != CodesRotating {
		return Unprocessable(`ticketCodes must be "static" or "rotating"`)
	}
	return nil
}

// Printable refuses the files that carry a ticket's static code (PDF, pass, QR image) for a rotating show.
func (t Ticket) Printable() error {
	if t.Codes == CodesRotating {
		return fmt.Errorf("ticket %s: the code is on the holder's phone, made afresh every %s: %w", t.ID,
			ticket.RotateEvery, ErrRotatingCodes)
	}
	return nil
}

// GateStore is the ledger's side of the door's offline scans.
type GateStore interface {
	// GateTickets lists the show's tickets that admit or admitted: VALID and CHECKED_IN.
	GateTickets(ctx context.Context, showID string) ([]TicketInfo, error)
	// RecordScan records one device's scan of a ticket, under the ticket's lock: the earliest scan heard of
	// checks it in, a device's second sending is ScanDuplicate, a later scan from another device ScanConflict;
	// a ticket that no longer admits is ScanRefused with the refusal in Err. The error is the store's only.
	RecordScan(ctx context.Context, s Scan) (ScanResult, error)
	// GateConflicts lists the show's tickets scanned by two devices, with the first scan and each later one.
	GateConflicts(ctx context.Context, showID string) ([]GateConflict, error)
}

// codesOf is the show's kind of code.
func (p *Checkout) codesOf(ctx context.Context, showID string) (TicketCodes, error) {
	tp, err := p.TicketPolicy(ctx, showID)
	return tp.Codes, err
}

// presentCodes marks ts, tickets of showID about to be shown to their holder, with the show's kind of code, and
// leaves out the static code of a rotating show: it would be refused at the door, and an image of it sold on.
func (p *Checkout) presentCodes(ctx context.Context, showID string, ts []Ticket) error {
	if len(ts) == 0 {
		return nil
	}
	codes, err := p.codesOf(ctx, showID)
	if err != nil {
		return err
	}
	for i := range ts {
		ts[i].Codes = codes
		if codes == CodesRotating {
			ts[i].Code = ""
		}
	}
	return nil
}

// notAfter is when a show's certificates stop admitting: a day after it starts (shows have no end time).
func notAfter(sh Show) time.Time { return sh.StartsAt.Add(24 * time.Hour) }

// HolderCode is what the holder's page needs to show a rotating code and to make the next ones itself.
type HolderCode struct {
	Code         string
	ValidUntil   time.Time // the code's stamp plus ticket.MaxAge
	RotatesEvery time.Duration
	Certificate  []byte
	CertSig      []byte
	HolderSeed   []byte // the holder key's 32-byte Ed25519 seed
	ServerTime   time.Time
}

// HolderCode returns a fresh rotating code of one of the user's tickets with the material to make the next
// ones: ErrStaticCodes for a show with static codes, the ticket's refusal when it no longer admits.
func (p *Checkout) HolderCode(ctx context.Context, ticketID, userID string) (HolderCode, error) {
	t, err := p.ownTicket(ctx, ticketID, userID)
	if err != nil {
		return HolderCode{}, err
	}
	if err := TicketRefusal(t.ID, t.Status); err != nil {
		return HolderCode{}, err
	}
	codes, err := p.codesOf(ctx, t.ShowID)
	if err != nil {
		return HolderCode{}, err
	}
	if codes != CodesRotating {
		return HolderCode{}, fmt.Errorf("show %s: its tickets carry one static code each: %w", t.ShowID, ErrStaticCodes)
	}
	sh, err := p.holds.catalog.Show(ctx, t.ShowID)
	if err != nil {
		return HolderCode{}, err
	}
	h, err := p.signer.Certify(t.ID, t.ShowID, t.SeatID, notAfter(sh))
	if err != nil {
		return HolderCode{}, err
	}
	now := p.cfg.Now().UTC()
	return HolderCode{Code: h.Stamp(now), ValidUntil: now.Truncate(time.Second).Add(ticket.MaxAge),
		RotatesEvery: ticket.RotateEvery, Certificate: h.Cert, CertSig: h.CertSig, HolderSeed: h.Seed(),
		ServerTime: now}, nil
}

// readCode checks a code presented at the door at at, for showID ("" for whichever show the code names): a
// rotating code by the show's kit rules, a static one by its signature and only for a show with static codes.
// A rotating code is accepted for a show switched back to static codes: it is the stronger of the two.
func (p *Checkout) readCode(ctx context.Context, code, showID string, at time.Time) (ticket.Claims, error) {
	if ticket.IsRotating(code) {
		if showID == "" {
			cert, err := ticket.Peek(code)
			if err != nil {
				return ticket.Claims{}, codeError(err)
			}
			showID = cert.ShowID // only to choose the kit: the certificate's signature is checked next
		}
		r, err := (&ticket.Kit{ShowID: showID, Keys: p.verifier.Keys()}).Verify(code, at)
		if err != nil {
			return ticket.Claims{}, codeError(err)
		}
		return r.Claims(), nil
	}
	c, err := p.verifier.Verify(code)
	if err != nil {
		return ticket.Claims{}, codeError(err)
	}
	if showID != "" && c.ShowID != showID {
		return ticket.Claims{}, codeError(ticket.ErrWrongShow)
	}
	codes, err := p.codesOf(ctx, c.ShowID)
	if err != nil {
		return ticket.Claims{}, err
	}
	if codes == CodesRotating {
		return ticket.Claims{}, fmt.Errorf("a static code: the show's doors take the holder's rotating code: %w", ErrRotatingCodes)
	}
	return c, nil
}

// codeError is the domain's kind of a ticket code's refusal.
func codeError(err error) error {
	switch {
	case errors.Is(err, ticket.ErrExpired):
		return fmt.Errorf("%w: older than %s: a screenshot, or a phone whose clock is wrong: %w", ErrCodeExpired,
			ticket.MaxAge, err)
	case errors.Is(err, ticket.ErrStatic):
		return fmt.Errorf("%w: %w", ErrRotatingCodes, err)
	case errors.Is(err, ticket.ErrInvalid):
		return fmt.Errorf("%w: %w", ErrTicketInvalid, err)
	}
	return err
}

// GateKit is what a door device needs to check a show's codes with no network: public material only.
type GateKit struct {
	ShowID      string
	Title       string
	Codes       TicketCodes
	GeneratedAt time.Time
	Keys        []token.PublicKey
	MaxAge      time.Duration
	Skew        time.Duration
	RotateEvery time.Duration
	Tickets     []GateTicket
}

// GateTicket is one ticket of the kit.
type GateTicket struct {
	TicketID  string
	SeatID    string
	Category  string
	CheckedIn bool
}

// GateKit returns the show's kit as of now.
func (p *Checkout) GateKit(ctx context.Context, showID string) (GateKit, error) {
	if !ValidID(showID) {
		return GateKit{}, fmt.Errorf("show: %w", ErrNotFound)
	}
	sh, err := p.holds.catalog.Show(ctx, showID)
	if err != nil {
		return GateKit{}, err
	}
	codes, err := p.codesOf(ctx, showID)
	if err != nil {
		return GateKit{}, err
	}
	layout, err := p.holds.catalog.Layout(ctx, showID)
	if err != nil {
		return GateKit{}, err
	}
	category := make(map[string]string, len(layout))
	for _, s := range layout {
		category[s.ID] = s.Category
	}
	ts, err := p.store.GateTickets(ctx, showID)
	if err != nil {
		return GateKit{}, err
	}
	kit := GateKit{ShowID: sh.ID, Title: sh.Title, Codes: codes, GeneratedAt: p.cfg.Now().UTC(),
		Keys: []token.PublicKey{p.signer.Public()}, MaxAge: ticket.MaxAge, Skew: ticket.Skew,
		RotateEvery: ticket.RotateEvery, Tickets: make([]GateTicket, 0, len(ts))}
	for _, t := range ts {
		kit.Tickets = append(kit.Tickets, GateTicket{TicketID: t.ID, SeatID: t.SeatID, Category: category[t.SeatID],
			CheckedIn: t.Status == TicketCheckedIn})
	}
	return kit, nil
}

// ScanStatus is what became of one offline scan.
type ScanStatus string

// A scan admitted (the earliest heard of its ticket), sent again by its device, later than another device's, or
// refused (its code, or its ticket no longer admitting).
const (
	ScanAdmitted  ScanStatus = "admitted"
	ScanDuplicate ScanStatus = "duplicate"
	ScanConflict  ScanStatus = "conflict"
	ScanRefused   ScanStatus = "refused"
)

// GateScan is one scan as a door device sends it.
type GateScan struct {
	Code      string
	ScannedAt time.Time
}

// Scan is one device's scan of a ticket, its code checked.
type Scan struct {
	ShowID   string
	TicketID string
	SeatID   string
	DeviceID string
	At       time.Time
}

// ScanResult is the answer to one scan: the ticket's first scan as now recorded, or why it was refused.
type ScanResult struct {
	TicketID    string
	Status      ScanStatus
	FirstDevice string
	FirstAt     time.Time
	Err         error // ScanRefused's reason, a domain error
}

// GateConflict is a ticket scanned by two devices: the first scan and a later one.
type GateConflict struct {
	TicketID string
	SeatID   string
	First    Sighting
	Second   Sighting
}

// Sighting is one device's scan of a ticket.
type Sighting struct {
	DeviceID string
	At       time.Time
}

// The bound of one sync request: a device sends what it scanned since it was last online, in batches.
const (
	maxScans = 150 // about 50 KiB of codes: within BODY_LIMIT's default; a device sends more in batches
)

// GateScans records a door device's offline scans of showID: each code is checked as at its scan, then
// recorded under its ticket's lock (RecordScan). Sending the same scans again changes nothing.
func (p *Checkout) GateScans(ctx context.Context, showID, deviceID string, scans []GateScan) ([]ScanResult, error) {
	if !ValidID(deviceID) {
		return nil, Unprocessable("deviceId must be 1 to 64 letters, digits, '_' or '-'")
	}
	if len(scans) == 0 || len(scans) > maxScans {
		return nil, Unprocessable("scans must list 1 to %d scans", maxScans)
	}
	if !ValidID(showID) {
		return nil, fmt.Errorf("show: %w", ErrNotFound)
	}
	if _, err := p.holds.catalog.Show(ctx, showID); err != nil {
		return nil, err
	}
	now := p.cfg.Now()
	out := make([]ScanResult, len(scans))
	for i, sc := range scans {
		switch {
		case sc.Code == "" || len(sc.Code) > 1024:
			out[i] = ScanResult{Status: ScanRefused, Err: Invalid("scans[%d].code must be a ticket code", i)}
			continue
		case sc.ScannedAt.IsZero() || sc.ScannedAt.After(now.Add(ticket.Skew)):
			out[i] = ScanResult{Status: ScanRefused, Err: Invalid("scans[%d].scannedAt must be a time not in the future", i)}
			continue
		}
		c, err := p.readCode(ctx, sc.Code, showID, sc.ScannedAt)
		if err != nil {
			if !isRefusal(err) {
				return nil, err
			}
			out[i] = ScanResult{TicketID: c.TicketID, Status: ScanRefused, Err: err}
			continue
		}
		r, err := p.store.RecordScan(ctx, Scan{ShowID: showID, TicketID: c.TicketID, SeatID: c.SeatID,
			DeviceID: deviceID, At: sc.ScannedAt.UTC().Truncate(time.Microsecond)})
		if err != nil {
			return nil, err
		}
		r.TicketID = c.TicketID
		out[i] = r
	}
	return out, nil
}

// isRefusal tells a code's or a ticket's refusal, answered per scan, from a store's failure, which fails the
// whole sync (the device sends it again).
func isRefusal(err error) bool {
	for _, k := range []error{ErrTicketInvalid, ErrCodeExpired, ErrRotatingCodes, ErrNotFound, ErrTicketVoid,
		ErrTransferred, ErrTicketListed, ErrResold} {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

// GateConflicts lists the show's tickets that two devices admitted.
func (p *Checkout) GateConflicts(ctx context.Context, showID string) ([]GateConflict, error) {
	if !ValidID(showID) {
		return nil, fmt.Errorf("show: %w", ErrNotFound)
	}
	if _, err := p.holds.catalog.Show(ctx, showID); err != nil {
		return nil, err
	}
	return p.store.GateConflicts(ctx, showID)
}
