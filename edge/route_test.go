package edge

import "testing"

func TestMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, method, path string
		guard              Guard
		show               string
		class              Class
	}{
		{"seat map", "GET", "/api/v1/shows/s1/seats", ShowInPath, "s1", ClassAPI},
		{"seat map head", "HEAD", "/api/v1/shows/s1/seats", ShowInPath, "s1", ClassAPI},
		{"seat stream", "GET", "/api/v1/shows/s1/seats/stream", ShowInPath, "s1", ClassAPI},
		{"seat map, other case and trailing slash", "GET", "/API/v1/Shows/s1/SEATS//", ShowInPath, "s1", ClassAPI},
		{"seat-map page", "GET", "/shows/s1", ShowInPath, "s1", ClassAPI},
		{"hold", "POST", "/api/v1/bookings/hold", ShowInBody, "", ClassAPI},
		{"pay", "POST", "/api/v1/bookings/b1/pay", TokenIfSent, "", ClassAPI},
		{"show details are public", "GET", "/api/v1/shows/s1", Open, "", ClassAPI},
		{"catalog", "GET", "/api/v1/events", Open, "", ClassAPI},
		{"booking read", "GET", "/api/v1/bookings/b1", Open, "", ClassAPI},
		{"hold with GET is not a hold", "GET", "/api/v1/bookings/hold", Open, "", ClassAPI},
		{"deeper seat path", "GET", "/api/v1/shows/s1/seats/A1", Open, "", ClassAPI},
		{"queue", "POST", "/queue/s1/join", Open, "", ClassQueue},
		{"jwks", "GET", "/.well-known/jwks.json", Open, "", ClassQueue},
		{"metrics are not public", "GET", "/metrics", Open, "", ClassAPI},
		{"a page's script", "GET", "/assets/abc123/seatmap.js", Open, "", ClassStatic},
		{"favicon", "GET", "/favicon.ico", Open, "", ClassStatic},
		{"not a read of an asset", "POST", "/assets/abc123/seatmap.js", Open, "", ClassAPI},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Match(tc.method, tc.path)
			if got.Guard != tc.guard || got.ShowID != tc.show || got.Class != tc.class {
				t.Fatalf("got %+v, want guard %v show %q class %v", got, tc.guard, tc.show, tc.class)
			}
		})
	}
}
