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
		{"seat map", "GET", "/api/v1/shows/s1/seats", RequirePathShowAdmission, "s1", ClassAPI},
		{"seat map head", "HEAD", "/api/v1/shows/s1/seats", RequirePathShowAdmission, "s1", ClassAPI},
		{"seat stream", "GET", "/api/v1/shows/s1/seats/stream", RequirePathShowAdmission, "s1", ClassAPI},
		{"seat map, other case and trailing slash", "GET", "/API/v1/Shows/s1/SEATS//", RequirePathShowAdmission, "s1", ClassAPI},
		{"seat-map page", "GET", "/shows/s1", RequirePathShowAdmission, "s1", ClassAPI},
		{"hold", "POST", "/api/v1/bookings/hold", RequireBodyShowAdmission, "", ClassAPI},
		{"pay", "POST", "/api/v1/bookings/b1/pay", VerifyTokenIfSent, "", ClassAPI},
		{"buy on the exchange", "POST", "/api/v1/resale/rs_1/buy", VerifyTokenIfSent, "", ClassAPI},
		{"exchange listings", "GET", "/api/v1/shows/s1/resale", Ungated, "", ClassAPI},
		{"show details are public", "GET", "/api/v1/shows/s1", Ungated, "", ClassAPI},
		{"catalog", "GET", "/api/v1/events", Ungated, "", ClassAPI},
		{"booking read", "GET", "/api/v1/bookings/b1", Ungated, "", ClassAPI},
		{"hold with GET is not a hold", "GET", "/api/v1/bookings/hold", Ungated, "", ClassAPI},
		{"deeper seat path", "GET", "/api/v1/shows/s1/seats/A1", Ungated, "", ClassAPI},
		{"queue", "POST", "/queue/s1/join", Ungated, "", ClassQueue},
		{"jwks", "GET", "/.well-known/jwks.json", Ungated, "", ClassQueue},
		{"metrics are not public", "GET", "/metrics", Ungated, "", ClassAPI},
		{"a page's script", "GET", "/assets/abc123/seatmap.js", Ungated, "", ClassStatic},
		{"favicon", "GET", "/favicon.ico", Ungated, "", ClassStatic},
		{"not a read of an asset", "POST", "/assets/abc123/seatmap.js", Ungated, "", ClassAPI},
		{"the waiting room's script", "GET", "/queue/assets/abc123/queue.js", Ungated, "", ClassStatic},
		{"the waiting room's page", "GET", "/queue/s1", Ungated, "", ClassQueue},
		{"a show called assets", "GET", "/queue/assets/status", Ungated, "", ClassQueue},
		{"not a read of the waiting room's script", "POST", "/queue/assets/abc123/queue.js", Ungated, "", ClassQueue},
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
