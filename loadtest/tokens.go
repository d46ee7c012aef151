package loadtest

// Tokens is what the gate did with admission tokens, as the crowd saw it.
type Tokens struct {
	Admitted int   `json:"admitted"`          // fans given a token
	Used     int   `json:"used"`              // of those, fans that made a booking-route request with it
	Accepted int   `json:"accepted"`          // answered with anything but 401/403
	Refused  []int `json:"refused,omitempty"` // fans whose valid token was refused
	// RefusedWhy is each refused fan's first refusal: route, status, problem and the gate's reason.
	RefusedWhy map[int]string `json:"refusedWhy,omitempty"`
	// ExpiredFirst counts fans whose token expired before their first request with it was answered (an overloaded
	// platform); those refusals are the token's expiry, not the gate's failure.
	ExpiredFirst int   `json:"expiredFirst"`
	Probes       int   `json:"probes"`            // requests made without admission
	Allowed      []int `json:"allowed,omitempty"` // fans whose unadmitted probe was let through
	Unclear      int   `json:"unclear"`           // probes with no verdict (NoVerdict): no answer, 408, 429, 5xx
}

// CheckTokens reads the fans' token observations.
func CheckTokens(fans []*Fan) Tokens {
	var t Tokens
	for _, f := range fans {
		if f.Admitted {
			t.Admitted++
			if f.TokenStatus != 0 {
				t.Used++
				switch {
				case f.TokenStatus != 401 && f.TokenStatus != 403:
					t.Accepted++
				case f.TokenLate:
					t.ExpiredFirst++
				default:
					t.Refused = append(t.Refused, f.ID)
					if t.RefusedWhy == nil {
						t.RefusedWhy = map[int]string{}
					}
					t.RefusedWhy[f.ID] = f.TokenRefusal
				}
			}
		}
		allowed := false
		for _, p := range f.Probes {
			t.Probes++
			switch {
			case p.Status == 401 || p.Status == 403:
			case NoVerdict(p.Status):
				t.Unclear++ // no verdict from the gate either way
			default:
				allowed = true // answered past the gate: 2xx, or booking's own 4xx
			}
		}
		if allowed {
			t.Allowed = append(t.Allowed, f.ID)
		}
	}
	return t
}

// NoVerdict reports an answer that says nothing of what the gate decided: none at all, a request the server did not
// read in time (408: an overloaded edge's read deadline, before any handler ran), a rate limit (429), or a failure
// on the server's side (5xx). A probe answered so was neither let through nor refused.
func NoVerdict(status int) bool {
	return status == 0 || status == 408 || status == 429 || status >= 500
}
