package pdf_test

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"
	"golang.org/x/text/unicode/norm"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/ticket"
	"github.com/flashseat/flashseat/booking/ticket/pdf"
	"github.com/flashseat/flashseat/booking/ticket/pdf/pdftest"
)

// titles are shows in the scripts the catalog sells in, each read back as itself.
var titles = []struct{ name, title, venue string }{
	{"devanagari", "शाहरुख़ ख़ान लाइव — क्षितिज", "नेहरू सेंटर, वरली"},
	{"latin accents", "Café Tacvba — Über die Brücke", "Salle Pleyel"},
	{"tamil", "இளையராஜா இசை நிகழ்ச்சி — க்ஷேத்திரம்", "சென்னை"},
	{"bengali", "রবীন্দ্রসংগীত সন্ধ্যা — শ্রীকান্ত", "কলকাতা"},
	{"long title wraps", "The Extraordinarily Long Farewell Tour of the Philharmonic Orchestra of the Western " +
		"Provinces, Second Night", "Arena"},
}

func signedTickets(t testing.TB, n int) []booking.Ticket {
	t.Helper()
	key, _, err := ticket.LoadKey("")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ticket.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	var out []booking.Ticket
	for i := range n {
		id, seat := fmt.Sprintf("tk_%032x", i+1), fmt.Sprintf("B%d", i+10)
		code, err := s.Sign(id, "sh_1", seat)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, booking.Ticket{ID: id, SeatID: seat, Code: code})
	}
	return out
}

// TestRenderScripts: each page of each show reads back, through the fonts' ToUnicode maps, as the catalog's
// title and venue (after NFC), the seat, the holder and the ticket; its QR code decodes to the ticket's code.
func TestRenderScripts(t *testing.T) {
	tickets := signedTickets(t, 3)
	for i, c := range titles {
		t.Run(c.name, func(t *testing.T) {
			show := booking.Show{ID: "sh_1", Title: c.title, Venue: c.venue, Hall: "Main hall", City: "Pune",
				StartsAt: time.Date(2027, 3, 4, 19, 30, 0, 0, time.UTC)}
			holder := []string{"Zoë Müller", "fan@example.com", "प्रिया शर्मा"}[i%3]
			data, err := pdf.Render(show, "bk_1", holder, tickets)
			if err != nil {
				t.Fatal(err)
			}
			doc := pdftest.Read(t, data)
			if doc.Pages != len(tickets) || len(doc.Text) != len(tickets) {
				t.Fatalf("pages %d, pages with text %d, want %d", doc.Pages, len(doc.Text), len(tickets))
			}
			for p, tk := range tickets {
				lines := strings.Split(norm.NFC.String(doc.Text[p]), "\n")
				if len(lines) < 7 {
					t.Fatalf("page %d has %d lines: %q", p+1, len(lines), lines)
				}
				title := strings.Join(lines[:len(lines)-6], " ") // the title takes every line above the last 6
				if want := norm.NFC.String(c.title); title != want {
					t.Errorf("page %d title %q, want %q", p+1, title, want)
				}
				rest := lines[len(lines)-6:]
				want := []string{norm.NFC.String(c.venue + ", Main hall, Pune"), "Thu 4 Mar 2027 19:30 UTC",
					"Holder: " + norm.NFC.String(holder), "Seat " + tk.SeatID, "Ticket " + tk.ID + " - booking bk_1",
					"Show this code at the door. It admits once."}
				if got := strings.Join(rest, "|"); got != strings.Join(want, "|") {
					t.Errorf("page %d lines %q, want %q", p+1, rest, want)
				}
				if len(doc.Images[p]) != 1 {
					t.Fatalf("page %d has %d images, want its QR code", p+1, len(doc.Images[p]))
				}
				if got := decodeQR(t, doc.Images[p][0]); got != tk.Code {
					t.Errorf("page %d QR code reads %q, want %q", p+1, got, tk.Code)
				}
			}
			if c.name == "long title wraps" && strings.Count(doc.Text[0], "\n") < 7 {
				t.Errorf("a title wider than the page was not wrapped: %q", doc.Text[0])
			}
		})
	}
}

func decodeQR(t *testing.T, img image.Image) string {
	t.Helper()
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		t.Fatal(err)
	}
	res, err := qrcode.NewQRCodeReader().Decode(bmp, map[gozxing.DecodeHintType]any{gozxing.DecodeHintType_PURE_BARCODE: true})
	if err != nil {
		t.Fatalf("QR code does not decode: %v", err)
	}
	return res.GetText()
}

// TestRenderNoHolder: without a contact, the page leaves the holder's line off rather than printing an empty one.
func TestRenderNoHolder(t *testing.T) {
	data, err := pdf.Render(booking.Show{Title: "Show", Venue: "Arena"}, "bk_1", "", signedTickets(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	if text := pdftest.Read(t, data).Text[0]; strings.Contains(text, "Holder") {
		t.Fatalf("page names a holder: %q", text)
	}
}

// TestRenderPoppler: poppler's pdftotext, a reader of its own, extracts the same text. deploy/dev/tools.sh
// installs it (poppler-utils); without it the test skips.
func TestRenderPoppler(t *testing.T) {
	bin, err := exec.LookPath("pdftotext")
	if err != nil {
		t.Skip("pdftotext is not installed (deploy/dev/tools.sh installs poppler-utils)")
	}
	for _, c := range titles[:4] {
		data, err := pdf.Render(booking.Show{Title: c.title, Venue: c.venue}, "bk_1", "प्रिया शर्मा", signedTickets(t, 1))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-", "-")
		cmd.Stdin = bytes.NewReader(data)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("pdftotext: %v", err)
		}
		// pdftotext lays a wrapped title out on lines of its own: compare with runs of space as one space.
		got := strings.Join(strings.Fields(norm.NFC.String(string(out))), " ")
		for _, want := range []string{c.title, c.venue, "Holder: प्रिया शर्मा"} {
			if !strings.Contains(got, norm.NFC.String(want)) {
				t.Errorf("pdftotext gave %q, lacking %q", got, want)
			}
		}
	}
}

func TestRenderNothing(t *testing.T) {
	if _, err := pdf.Render(booking.Show{}, "b1", "", nil); !errors.Is(err, pdf.ErrNoTickets) {
		t.Fatalf("got %v, want ErrNoTickets", err)
	}
}

// BenchmarkRender: a booking of four tickets with a Devanagari title, as the download and the mail render it.
func BenchmarkRender(b *testing.B) {
	tickets := signedTickets(b, 4)
	show := booking.Show{Title: titles[0].title, Venue: titles[0].venue, City: "Mumbai"}
	var n int
	for b.Loop() {
		data, err := pdf.Render(show, "bk_1", "प्रिया शर्मा", tickets)
		if err != nil {
			b.Fatal(err)
		}
		n = len(data)
	}
	b.ReportMetric(float64(n), "bytes")
}

// TestRenderConcurrently: the parsed fonts are shared by every render; renders racing each other (run with
// -race) each still read back whole.
func TestRenderConcurrently(t *testing.T) {
	tickets := signedTickets(t, 2)
	errs := make(chan error, len(titles))
	docs := make([][]byte, len(titles))
	for i, c := range titles {
		go func() {
			var err error
			docs[i], err = pdf.Render(booking.Show{Title: c.title, Venue: c.venue}, "bk_1", "Zoë", tickets)
			errs <- err
		}()
	}
	for range titles {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range titles {
		if text := pdftest.Read(t, docs[i]).Text[1]; !strings.Contains(norm.NFC.String(text), norm.NFC.String(c.venue)) {
			t.Errorf("%s: page 2 reads %q", c.name, text)
		}
	}
}
