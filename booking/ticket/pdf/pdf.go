// Package pdf renders a booking's tickets as a PDF, one A4 page per ticket with its QR code, seat, show, venue,
// time and holder, for the booking page's download (booking/http) and the confirmation mail (booking/notify).
// The code on each page is the ticket's current code, so a page printed before a refund or a transfer stops
// admitting with the ticket: check-in asks the ledger, not the paper.
//
// Text in any script the embedded fonts cover (Latin, Greek, Cyrillic, Devanagari, Tamil, Bengali) is shaped
// with HarfBuzz's algorithms (go-text/typesetting) and set in subsets of those fonts, each glyph mapped back to
// the text it was set for, so that copying or extracting a page's text gives the catalog's strings.
package pdf

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"strings"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/ticket/qr"
)

// ContentType is what Render produces.
const ContentType = "application/pdf"

// ErrNoTickets: there is nothing to print.
var ErrNoTickets = errors.New("pdf: no tickets")

// timeLayout is how a page states the show's start (UTC, as the confirmation mail does).
const timeLayout = "Mon 2 Jan 2006 15:04 MST"

// The page, in points: A4 with 20 mm margins; the QR code is 120 mm square, 512 pixels (about 108 dpi).
const (
	pageW, pageH = 595.28, 841.89
	margin       = 56.69
	qrSide       = 340.16
	qrPixels     = 512
)

// Render returns the PDF of tickets for show, one page per ticket, in the order given. holder names the fan the
// tickets are for (their name, else their e-mail); "" leaves the line off.
func Render(show booking.Show, bookingID, holder string, tickets []booking.Ticket) ([]byte, error) {
	if len(tickets) == 0 {
		return nil, ErrNoTickets
	}
	fs, err := faces()
	if err != nil {
		return nil, err
	}
	s := &shaper{fm: newFontmap(fs)}
	w := newWriter()
	title := s.wrap(show.Title, 22, pageW-2*margin)
	var pages []int
	for _, t := range tickets {
		img, err := qr.Image(t.Code, qrPixels)
		if err != nil {
			return nil, err
		}
		ref, err := renderPage(w, s, title, show, bookingID, holder, t, img)
		if err != nil {
			return nil, err
		}
		pages = append(pages, ref)
	}
	return w.finish(pages, fmt.Sprintf("<< /Title %s /Creator (flashseat) /Producer (flashseat) >>",
		textString("Tickets "+bookingID)))
}

// renderPage writes one ticket's page and returns its object number.
func renderPage(w *writer, s *shaper, title []line, show booking.Show, bookingID, holder string,
	t booking.Ticket, qrCode *image.Gray) (int, error) {
	image := w.image(qrCode)
	var c content
	y := pageH - margin
	for _, l := range title {
		y -= l.size * 1.5
		c.text(w, l, margin, y, true)
	}
	y -= 6
	lines := []string{venue(show), show.StartsAt.UTC().Format(timeLayout)}
	if holder != "" {
		lines = append(lines, "Holder: "+holder)
	}
	for _, text := range lines {
		y -= 13 * 1.6
		c.text(w, s.shape(text, 13), margin, y, false)
	}
	y -= 14 + 30*1.2
	c.text(w, s.shape("Seat "+t.SeatID, 30), margin, y, true)
	y -= 18 + qrSide
	fmt.Fprintf(&c.b, "q %.2f 0 0 %.2f %.2f %.2f cm /Q Do Q\n", qrSide, qrSide, (pageW-qrSide)/2, y)
	for _, text := range []string{"Ticket " + t.ID + " - booking " + bookingID,
		"Show this code at the door. It admits once."} {
		y -= 10 * 1.7
		l := s.shape(text, 10)
		c.text(w, l, (pageW-l.width)/2, y, false)
	}
	contents, page := w.alloc(), w.alloc()
	w.stream(contents, "", c.b.Bytes())
	w.object(page, fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %.2f %.2f] "+
		"/Resources << /Font %d 0 R /XObject << /Q %d 0 R >> >> /Contents %d 0 R >>",
		w.tree, pageW, pageH, w.fontRes, image, contents))
	return page, nil
}

// content is a page's content stream.
type content struct {
	b bytes.Buffer
}

// text draws l with its origin at (x, y). The line is also marked with its text as ActualText, which readers
// that honour it (poppler, Acrobat) use for search and copy as they are: the ToUnicode maps give the same text
// to those that read glyph by glyph.
func (c *content) text(w *writer, l line, x, y float64, bold bool) {
	if len(l.glyphs) == 0 {
		return
	}
	fmt.Fprintf(&c.b, "/Span << /ActualText %s >> BDC BT\n", textString(l.text))
	if bold {
		// Stroking the outlines as well as filling them thickens them by the line width: a bold weight
		// without embedding a second set of fonts.
		fmt.Fprintf(&c.b, "2 Tr %.2f w\n", l.size*0.03)
	}
	var cur *fontUse
	for _, g := range l.glyphs {
		if u := w.font(g.face); u != cur {
			cur = u
			fmt.Fprintf(&c.b, "/%s %.1f Tf\n", u.res, l.size)
		}
		fmt.Fprintf(&c.b, "1 0 0 1 %.2f %.2f Tm <%04X> Tj\n", x+g.x, y+g.y, cur.code(g))
	}
	c.b.WriteString("ET EMC\n")
}

func venue(s booking.Show) string {
	var parts []string
	for _, p := range []string{s.Venue, s.Hall, s.City} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ", ")
}
