package pdftest_test

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/go-pdf/fpdf"

	"github.com/flashseat/flashseat/booking/ticket/pdf/pdftest"
)

// TestStreamEndingInCR: a deflated stream whose last byte is a CR (its checksum's, one in 256) is read whole. It
// used to lose that byte to the optional CR before endstream, and a ticket file failed now and then as corrupt.
func TestStreamEndingInCR(t *testing.T) {
	lengthAt := regexp.MustCompile(`/Length (\d+)>>\s*stream\r?\n`)
	// Seat A10019 is the first such text with today's fpdf (its streams are deterministic); the search goes on
	// from there should another version compress differently.
	for i := 10019; i < 40000; i++ {
		want := fmt.Sprintf("Seat A%d", i)
		doc := fpdf.New("P", "mm", "A4", "")
		doc.AddPage()
		doc.SetFont("Helvetica", "", 12)
		doc.Cell(40, 10, want)
		var buf bytes.Buffer
		if err := doc.Output(&buf); err != nil {
			t.Fatal(err)
		}
		data := buf.Bytes()
		endsInCR := false
		for _, m := range lengthAt.FindAllSubmatchIndex(data, -1) {
			n, _ := strconv.Atoi(string(data[m[2]:m[3]]))
			if end := m[1] + n; end <= len(data) && n > 0 && data[end-1] == '\r' {
				endsInCR = true
			}
		}
		if !endsInCR {
			continue
		}
		d := pdftest.Read(t, data)
		if d.Pages != 1 || !strings.Contains(strings.Join(d.Text, "\n"), want) {
			t.Fatalf("a stream ending in CR: %d pages, text %q; want %q", d.Pages, d.Text, want)
		}
		return
	}
	t.Skip("no document's stream ended in a CR")
}
