package pdf_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/ticket/pdf"
	"github.com/flashseat/flashseat/booking/ticket/pdf/pdftest"
)

func TestRenderOnePagePerTicket(t *testing.T) {
	show := booking.Show{ID: "s1", Title: "Café Tacvba Live", Venue: "Arena", Hall: "Main hall", City: "Pune",
		StartsAt: time.Date(2027, 3, 4, 19, 30, 0, 0, time.UTC)}
	tickets := []booking.Ticket{{ID: "t1", SeatID: "A1", Code: "code-one"}, {ID: "t2", SeatID: "B12", Code: "code-two"}}
	data, err := pdf.Render(show, "b1", "", tickets)
	if err != nil {
		t.Fatal(err)
	}
	doc := pdftest.Read(t, data)
	if doc.Pages != 2 || len(doc.Text) != 2 {
		t.Fatalf("pages %d, pages with text %d, want 2 and 2", doc.Pages, len(doc.Text))
	}
	for i, want := range []string{"Seat A1", "Seat B12"} {
		for _, w := range []string{want, "Café Tacvba Live", "Arena, Main hall, Pune", "Thu 4 Mar 2027 19:30 UTC",
			"Ticket " + tickets[i].ID} {
			if !strings.Contains(doc.Text[i], w) {
				t.Errorf("page %d text %q lacks %q", i+1, doc.Text[i], w)
			}
		}
	}
}

func TestRenderNothing(t *testing.T) {
	if _, err := pdf.Render(booking.Show{}, "b1", "", nil); !errors.Is(err, pdf.ErrNoTickets) {
		t.Fatalf("got %v, want ErrNoTickets", err)
	}
}
