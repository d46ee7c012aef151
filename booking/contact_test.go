package booking_test

import (
	"testing"

	"github.com/flashseat/flashseat/booking"
)

func TestContactHolder(t *testing.T) {
	for _, c := range []struct {
		name    string
		contact booking.Contact
		want    string
	}{
		{"name", booking.Contact{Email: "fan@example.com", Name: "Zoë Müller"}, "Zoë Müller"},
		{"e-mail without a name", booking.Contact{Email: "fan@example.com"}, "fan@example.com"},
		{"no contact", booking.Contact{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.contact.Holder(); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}
