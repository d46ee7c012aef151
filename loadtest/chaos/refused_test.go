package chaos_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/loadtest"
)

// refusedFans lists the admitted fans whose admission token a booking route refused while it was valid: the
// first answer to it (seat map or hold) was 401 or 403 before its exp, or a later hold or payment ended the fan
// as refused (an expired token ends it as token-expired instead). Whatever the faults, a fan once admitted
// stays admitted until the token expires or its booking is done.
func refusedFans(run *loadtest.Run) []*loadtest.Fan {
	var out []*loadtest.Fan
	for _, f := range run.Fans {
		first := (f.TokenStatus == http.StatusUnauthorized || f.TokenStatus == http.StatusForbidden) && !f.TokenLate
		if f.Admitted && (first || f.Outcome == loadtest.OutcomeRefused) {
			out = append(out, f)
		}
	}
	return out
}

// explainRefusals describes each refused fan with what the records say of its admission, so that a failure
// names its cause: the admission missing from the record, revoked (and which of the fan's bookings carried it),
// or neither (the token itself was refused: signature, key, user).
func explainRefusals(ctx context.Context, pool *pgxpool.Pool, run *loadtest.Run, fans []*loadtest.Fan) []string {
	opened := run.StartedAt.Add(run.SaleOpens)
	at := func(d time.Duration) string {
		return "+" + run.StartedAt.Add(d).Sub(opened).Round(100*time.Millisecond).String()
	}
	out := make([]string, 0, len(fans))
	for _, f := range fans {
		jti := tokenID(f.Token)
		s := fmt.Sprintf("fan %d (admitted at %s, %s", f.ID, at(f.AdmittedAt), f.Outcome)
		if f.RefusedAt > 0 {
			s += " at " + at(f.RefusedAt)
		}
		if f.Detail != "" {
			s += ": " + f.Detail
		}
		s += fmt.Sprintf("; first answer to the token %d", f.TokenStatus)
		var recorded int
		var revoked *time.Time
		err := pool.QueryRow(ctx, `SELECT count(*), max(revoked_at) FROM queue_grants WHERE jti = $1`, jti).
			Scan(&recorded, &revoked)
		switch {
		case err != nil:
			s += fmt.Sprintf("; admission %s: %v", jti, err)
		case recorded == 0:
			s += fmt.Sprintf("; admission %s NOT on record", jti)
		case revoked != nil:
			s += fmt.Sprintf("; admission %s revoked at %s", jti, "+"+revoked.Sub(opened).Round(100*time.Millisecond).String())
		default:
			s += fmt.Sprintf("; admission %s on record, not revoked", jti)
		}
		rows, err := pool.Query(ctx, `SELECT id, status, created_at, updated_at FROM bookings WHERE admission_jti = $1
			ORDER BY created_at`, jti)
		if err == nil {
			for rows.Next() {
				var id, status string
				var created, updated time.Time
				if rows.Scan(&id, &status, &created, &updated) == nil {
					s += fmt.Sprintf("; booking %s %s (made %s, last changed %s)", id, status,
						"+"+created.Sub(opened).Round(100*time.Millisecond).String(),
						"+"+updated.Sub(opened).Round(100*time.Millisecond).String())
				}
			}
			rows.Close()
		}
		out = append(out, s+")")
	}
	return out
}

// tokenID reads a token's jti claim (unverified: for the report only).
func tokenID(raw string) string {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var c struct {
		ID string `json:"jti"`
	}
	_ = json.Unmarshal(b, &c)
	return c.ID
}

// gateRefusals reads the edge's admission refusals by reason from its operations address (since its last
// restart).
func gateRefusals(ctx context.Context, opsAddr string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+opsAddr+"/metrics", nil)
	if err != nil {
		return err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "edge_gate_refusals_total{") {
			lines = append(lines, strings.TrimPrefix(l, "edge_gate_refusals_total"))
		}
	}
	if len(lines) == 0 {
		return "none"
	}
	return strings.Join(lines, ", ")
}
