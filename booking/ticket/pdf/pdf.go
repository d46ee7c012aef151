// Package pdf renders a booking's tickets as a PDF, one A4 page per ticket with its QR code, seat, show, venue
// and time, for the booking page's download (booking/http) and the confirmation mail (booking/notify). The code on
// each page is the ticket's current code, so a page printed before a refund or a transfer stops admitting with
// the ticket: check-in asks the ledger, not the paper.
package pdf

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/go-pdf/fpdf"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/ticket/qr"
)

// ContentType is what Render produces.
const ContentType = "application/pdf"

// ErrNoTickets: there is nothing to print.
var ErrNoTickets = errors.New("pdf: no tickets")

// timeLayout is how a page states the show's start (UTC, as the confirmation mail does).
const timeLayout = "Mon 2 Jan 2006 15:04 MST"

// Render returns the PDF of tickets for show, one page per ticket, in the order given.
func Render(show booking.Show, bookingID string, tickets []booking.Ticket) ([]byte, error) {
	if len(tickets) == 0 {
		return nil, ErrNoTickets
	}
	doc := fpdf.New("P", "mm", "A4", "")
	doc.SetTitle("Tickets "+bookingID, true)
	doc.SetCreator("flashseat", true)
	// The core fonts are cp1252: titles and venues in other scripts lose the letters cp1252 lacks rather than
	// garbling the page.
	tr := doc.UnicodeTranslatorFromDescriptor("")
	for _, t := range tickets {
		png, err := qr.PNG(t.Code, 512)
		if err != nil {
			return nil, err
		}
		doc.AddPage()
		doc.SetFont("Helvetica", "B", 22)
		doc.MultiCell(0, 10, tr(show.Title), "", "L", false)
		doc.SetFont("Helvetica", "", 13)
		doc.CellFormat(0, 8, tr(venue(show)), "", 1, "L", false, 0, "")
		doc.CellFormat(0, 8, show.StartsAt.UTC().Format(timeLayout), "", 1, "L", false, 0, "")
		doc.Ln(4)
		doc.SetFont("Helvetica", "B", 30)
		doc.CellFormat(0, 14, "Seat "+tr(t.SeatID), "", 1, "L", false, 0, "")
		name := "qr-" + t.ID
		doc.RegisterImageOptionsReader(name, fpdf.ImageOptions{ImageType: "PNG"}, bytes.NewReader(png))
		doc.ImageOptions(name, 45, doc.GetY()+6, 120, 120, false, fpdf.ImageOptions{ImageType: "PNG"}, 0, "")
		doc.SetY(doc.GetY() + 132)
		doc.SetFont("Helvetica", "", 10)
		doc.CellFormat(0, 6, "Ticket "+t.ID+" - booking "+bookingID, "", 1, "C", false, 0, "")
		doc.CellFormat(0, 6, "Show this code at the door. It admits once.", "", 1, "C", false, 0, "")
	}
	var out bytes.Buffer
	if err := doc.Output(&out); err != nil {
		return nil, fmt.Errorf("pdf: %w", err)
	}
	return out.Bytes(), nil
}

func venue(s booking.Show) string {
	v := s.Venue
	for _, part := range []string{s.Hall, s.City} {
		if part != "" {
			if v != "" {
				v += ", "
			}
			v += part
		}
	}
	return v
}
