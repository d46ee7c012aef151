package browsertest

import "testing"

// TestTokenInURL: the check every browser test runs on every URL a page requests.
func TestTokenInURL(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]bool{
		"http://h/shows/sh_1":                                        false,
		"http://h/queue/sh_1/events":                                 false,
		"http://h/?city=Bangalore&genre=Drama":                       false,
		"http://h/bookings/bk_1?redirect_status=succeeded":           false,
		"http://h/shows/sh_1?admission=x":                            true,
		"http://h/queue/sh_1/events?access_token=abc":                true,
		"http://h/x?a=1&token=abc":                                   true,
		"http://h/x#eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ1In0.c2ln":       true,
		"http://h/x/eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIi/y": true,
		"http://h/assets/0a1b2c/seatmap.js":                          false,
		"http://h/api/v1/tickets/tk_1/qr.png":                        false,
		"http://h/x?session=abc":                                     true,
		"http://h/x?mysession=abc":                                   false,
	} {
		if got := TokenInURL(url); got != want {
			t.Errorf("TokenInURL(%q) = %v, want %v", url, got, want)
		}
	}
}
