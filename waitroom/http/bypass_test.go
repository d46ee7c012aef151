package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/audit"
	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/shared/token"
	"github.com/flashseat/flashseat/waitroom"
	"github.com/flashseat/flashseat/waitroom/internal/wrtest"
	wrredis "github.com/flashseat/flashseat/waitroom/redis"
)

type issuedCode struct {
	ID        string     `json:"id"`
	Code      string     `json:"code"`
	Hint      string     `json:"hint"`
	Uses      int        `json:"uses"`
	Used      int        `json:"used"`
	ExpiresAt time.Time  `json:"expiresAt"`
	RevokedAt *time.Time `json:"revokedAt"`
}

// issue asks for count codes of uses each, expiring in an hour.
func (s *server) issue(t *testing.T, show string, count, uses int) []issuedCode {
	t.Helper()
	body := fmt.Sprintf(`{"count":%d,"uses":%d,"expiresAt":%q}`, count, uses,
		time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	res, b := s.do(t, "POST", "/admin/v1/shows/"+show+"/bypass-codes", "Bearer "+adminToken, body,
		audit.OperatorHeader, "Asha")
	var out struct {
		Codes []issuedCode `json:"codes"`
	}
	if res.StatusCode != 201 || json.Unmarshal(b, &out) != nil || len(out.Codes) != count {
		t.Fatalf("issue: %d %s", res.StatusCode, b)
	}
	return out.Codes
}

func (s *server) codes(t *testing.T, show string) map[string]issuedCode {
	t.Helper()
	res, b := s.do(t, "GET", "/admin/v1/shows/"+show+"/bypass-codes", "Bearer "+adminToken, "")
	var out struct {
		Codes []issuedCode `json:"codes"`
	}
	if res.StatusCode != 200 || json.Unmarshal(b, &out) != nil {
		t.Fatalf("list: %d %s", res.StatusCode, b)
	}
	m := map[string]issuedCode{}
	for _, c := range out.Codes {
		if c.Code != "" {
			t.Fatalf("the list gives a code away: %s", b)
		}
		m[c.ID] = c
	}
	return m
}

// redeem joins with a bypass code and no proof.
func (s *server) redeem(t *testing.T, show, user, code string) (int, []byte) {
	t.Helper()
	res, b := s.do(t, "POST", "/queue/"+show+"/join", "Bearer "+s.user(t, user), `{"bypassCode":"`+code+`"}`)
	return res.StatusCode, b
}

func wantProblem(t *testing.T, status int, b []byte, wantStatus int, slug string) {
	t.Helper()
	var p struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(b, &p) != nil || status != wantStatus || p.Type != problem.TypeBase+slug {
		t.Fatalf("got %d %s, want %d %s", status, b, wantStatus, slug)
	}
}

func wantAdmitted(t *testing.T, s *server, show, user string, status int, b []byte) state {
	t.Helper()
	var st state
	if status != 200 || json.Unmarshal(b, &st) != nil || st.Status != "admitted" || st.AdmissionToken == "" {
		t.Fatalf("redeem for %s: %d %s, want admitted", user, status, b)
	}
	if _, err := token.NewVerifier(token.NewStaticKeys(s.issuer.Keys()...), 0).Verify(st.AdmissionToken, show, user); err != nil {
		t.Fatalf("the bypass admission's token does not verify: %v", err)
	}
	return st
}

// TestBypassCodes: a fan with a code is admitted at once on a show that asks every other fan for a proof of work,
// and is counted among the active admissions; the same fan again gets the same admission without spending a
// use; a used-up, revoked, expired, unknown, forged or mistyped code is a problem, after which the fan joins the
// line as anyone would; the list shows the uses, never the codes; issue, use and revoke are audited.
func TestBypassCodes(t *testing.T) {
	t.Parallel()
	g := newGuarded(t, waitroom.Options{Tick: 50 * time.Millisecond})
	s := g.server
	show := g.guardedShow(t, 0.001, `{}`)
	// The line has someone in it, so a fan admitted went past them.
	if status, b := g.enter(t, show, "in-line", "198.51.100.7", proofBody(solve(t, g.challenge(t, show, "in-line", "198.51.100.7")))); status != 200 {
		t.Fatalf("join the line: %d %s", status, b)
	}
	codes := s.issue(t, show, 3, 1)
	if codes[0].Code == codes[1].Code || len(codes[0].Code) != 23 || codes[0].Uses != 1 || codes[0].Hint != codes[0].Code[:5] {
		t.Fatalf("codes: %+v", codes)
	}

	// No proof, a valid code: admitted at once, ahead of the fan in line, counted among the active admissions.
	status, b := s.redeem(t, show, "vip", strings.ToLower(codes[0].Code)) // as typed: case does not matter
	vip := wantAdmitted(t, s, show, "vip", status, b)
	_, counts, err := s.svc.Settings(context.Background(), show)
	if err != nil || counts.Active != 1 || counts.Waiting != 1 {
		t.Fatalf("after the code: %+v %v, want 1 active and the fan in line still waiting", counts, err)
	}
	// Again, by the same fan: the same admission, no use spent.
	status, b = s.redeem(t, show, "vip", codes[0].Code)
	if again := wantAdmitted(t, s, show, "vip", status, b); again.AdmissionToken != vip.AdmissionToken {
		t.Fatal("the same fan presenting the code again got another admission")
	}
	if c := s.codes(t, show)[codes[0].ID]; c.Used != 1 || c.Uses != 1 {
		t.Fatalf("listed after one use: %+v", c)
	}

	// Used up: another fan gets 409 and may still join the line (with a proof, like anyone).
	status, b = s.redeem(t, show, "late", codes[0].Code)
	wantProblem(t, status, b, 409, problem.BypassCodeUsedUp)
	if status, b := g.enter(t, show, "late", "198.51.100.8", `{"bypassCode":"`+codes[0].Code+`"}`); status != 409 {
		t.Fatalf("a used-up code took the proof's place: %d %s", status, b)
	}
	status, b = g.enter(t, show, "late", "198.51.100.8", "") // without the code, the proof is asked as of anyone
	wantRefusal(t, status, b, 403, waitroom.ReasonProofRequired, waitroom.ReasonProofRequired)
	if status, b := g.enter(t, show, "late", "198.51.100.8", proofBody(solve(t, g.challenge(t, show, "late", "198.51.100.8")))); status != 200 || !strings.Contains(string(b), `"waiting"`) {
		t.Fatalf("refused a code, the fan joins the line: %d %s", status, b)
	}

	// Unknown, forged (a code's shape, never issued), another show's, mistyped: 422, nothing spent.
	other := g.guardedShow(t, 0.001, `{}`)
	foreign := s.issue(t, other, 1, 5)[0]
	for name, code := range map[string]string{
		"forged":       waitroom.NewBypassCode(),
		"another show": foreign.Code,
		"too short":    codes[1].Code[:10],
		"not base32":   "!!!!!-!!!!!-!!!!!-!!!!!",
	} {
		status, b := s.redeem(t, show, "guesser", code)
		if status != 422 || !strings.Contains(string(b), problem.TypeBase+problem.BypassCodeInvalid) {
			t.Errorf("%s code: %d %s, want 422 %s", name, status, b, problem.BypassCodeInvalid)
		}
	}
	if c := s.codes(t, other)[foreign.ID]; c.Used != 0 {
		t.Fatalf("another show's code was spent here: %+v", c)
	}

	// Revoked, by its id: 409; revoking by the code itself works as well, and again changes nothing.
	if res, b := s.do(t, "DELETE", "/admin/v1/shows/"+show+"/bypass-codes/"+codes[1].ID, "Bearer "+adminToken, ""); res.StatusCode != 200 || !strings.Contains(string(b), `"revokedAt"`) {
		t.Fatalf("revoke: %d %s", res.StatusCode, b)
	}
	status, b = s.redeem(t, show, "revoked-fan", codes[1].Code)
	wantProblem(t, status, b, 409, problem.BypassCodeRevoked)
	if res, b := s.do(t, "DELETE", "/admin/v1/shows/"+show+"/bypass-codes/"+codes[1].Code, "Bearer "+adminToken, ""); res.StatusCode != 200 {
		t.Fatalf("revoke by code: %d %s", res.StatusCode, b)
	}
	if res, b := s.do(t, "DELETE", "/admin/v1/shows/"+show+"/bypass-codes/0123456789abcdef", "Bearer "+adminToken, ""); res.StatusCode != 422 {
		t.Fatalf("revoke an unknown code: %d %s", res.StatusCode, b)
	}

	// Expired: 422.
	if _, err := wrtest.Database(t).Exec(context.Background(),
		`UPDATE bypass_codes SET expires_at = now() - interval '1 second' WHERE id = $1`, codes[2].ID); err != nil {
		t.Fatal(err)
	}
	status, b = s.redeem(t, show, "slow-fan", codes[2].Code)
	wantProblem(t, status, b, 422, problem.BypassCodeExpired)
	if c := s.codes(t, show)[codes[2].ID]; c.Used != 0 {
		t.Fatalf("an expired code was spent: %+v", c)
	}

	// The audit log: one issue per request, one use, the revocations; never a code's plain text.
	entries, err := audit.New(wrtest.Database(t)).List(context.Background(), audit.Filter{ShowID: show})
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]int{}
	for _, e := range entries {
		actions[e.Action]++
		for _, c := range codes {
			if strings.Contains(string(e.Old)+string(e.New), c.Code) {
				t.Fatalf("the audit log holds a code: %+v", e)
			}
		}
		if e.Action == "bypass.use" && e.Actor != "fan:vip" {
			t.Fatalf("use audited as %q", e.Actor)
		}
		if e.Action == "bypass.issue" && e.Actor != "Asha" {
			t.Fatalf("issue audited as %q", e.Actor)
		}
	}
	if actions["bypass.issue"] != 1 || actions["bypass.use"] != 1 || actions["bypass.revoke"] != 2 {
		t.Fatalf("audited: %v", actions)
	}
}

// TestBypassCodeRace: fans racing for one code's uses get exactly as many admissions as it has uses between them;
// every other fan is told it is used up. Two fans on a single-use code, then twenty on a three-use one.
func TestBypassCodeRace(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{Tick: 50 * time.Millisecond}, nil)
	show := s.show(t, 0.001, 1000)
	for _, tc := range []struct{ fans, uses int }{{2, 1}, {20, 3}} {
		code := s.issue(t, show, 1, tc.uses)[0]
		var mu sync.Mutex
		got := map[int]int{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range tc.fans {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				status, b := s.redeem(t, show, fmt.Sprintf("racer-%d-%d", tc.uses, i), code.Code)
				if status != 200 && status != 409 {
					t.Errorf("racer: %d %s", status, b)
				}
				mu.Lock()
				got[status]++
				mu.Unlock()
			}()
		}
		close(start)
		wg.Wait()
		if got[200] != tc.uses || got[409] != tc.fans-tc.uses {
			t.Fatalf("%d fans on a %d-use code: %v", tc.fans, tc.uses, got)
		}
		if c := s.codes(t, show)[code.ID]; c.Used != tc.uses {
			t.Fatalf("listed: %+v", c)
		}
	}
	var n int
	if err := wrtest.Database(t).QueryRow(context.Background(),
		`SELECT count(*) FROM queue_grants WHERE show_id = $1 AND jti LIKE 'bp.%'`, show).Scan(&n); err != nil || n != 4 {
		t.Fatalf("recorded admissions %d (%v), want 4", n, err)
	}
}

// TestBypassCodeNotNow: while admission is paused a code admits nobody and is kept for later; with the queue off
// the join answers as any join would, spending nothing. A fan in line who redeems a code leaves the line.
func TestBypassCodeNotNow(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{Tick: 50 * time.Millisecond}, nil)
	show := s.show(t, 0.001, 100)
	code := s.issue(t, show, 1, 1)[0]
	s.join(t, show, "first")
	s.join(t, show, "second")
	put := func(body string) {
		if res, b := s.do(t, "PUT", "/admin/v1/shows/"+show+"/queue", "Bearer "+adminToken, body); res.StatusCode != 200 {
			t.Fatalf("put %s: %d %s", body, res.StatusCode, b)
		}
	}
	put(`{"paused":true}`)
	status, b := s.redeem(t, show, "second", code.Code)
	wantProblem(t, status, b, 409, problem.BypassNotNow)
	put(`{"paused":false}`)
	status, b = s.redeem(t, show, "second", code.Code)
	wantAdmitted(t, s, show, "second", status, b)
	_, counts, err := s.svc.Settings(context.Background(), show)
	if err != nil || counts.Waiting != 1 || counts.Active != 1 {
		t.Fatalf("after a fan in line used a code: %+v %v", counts, err)
	}
	// The fan stays admitted: status says so, and no tick admits them a second time.
	res, b := s.do(t, "GET", "/queue/"+show+"/status", "Bearer "+s.user(t, "second"), "")
	if res.StatusCode != 200 || !strings.Contains(string(b), `"admitted"`) {
		t.Fatalf("status after the code: %d %s", res.StatusCode, b)
	}
	// Redis forgets the show: the admission is on record, so it comes back with its slot, and the code with it
	// still admits the same fan only.
	if err := s.rdb.Del(context.Background(), wrredis.Keys(show)...).Err(); err != nil {
		t.Fatal(err)
	}
	status, b = s.redeem(t, show, "second", code.Code)
	wantAdmitted(t, s, show, "second", status, b)
	status, b = s.redeem(t, show, "third", code.Code)
	wantProblem(t, status, b, 409, problem.BypassCodeUsedUp)
	if _, counts, err := s.svc.Settings(context.Background(), show); err != nil || counts.Active != 1 {
		t.Fatalf("after Redis lost the show: %+v %v", counts, err)
	}

	off := s.show(t, 0.001, 100)
	offCode := s.issue(t, off, 1, 1)[0]
	if res, b := s.do(t, "PUT", "/admin/v1/shows/"+off+"/queue", "Bearer "+adminToken, `{"enabled":false}`); res.StatusCode != 200 {
		t.Fatalf("queue off: %d %s", res.StatusCode, b)
	}
	status, b = s.redeem(t, off, "fan", offCode.Code)
	if status != 200 || !strings.Contains(string(b), `"closed"`) {
		t.Fatalf("a code on a queue that is off: %d %s", status, b)
	}
	if c := s.codes(t, off)[offCode.ID]; c.Used != 0 {
		t.Fatalf("spent on a queue that is off: %+v", c)
	}
}

// TestBypassIssueValidation: an operator's bad order is a 422 problem; only an operator may issue, list or revoke.
func TestBypassIssueValidation(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{Tick: 50 * time.Millisecond}, nil)
	show := s.show(t, 1, 100)
	soon := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for name, body := range map[string]string{
		"no expiry":     `{"count":1,"uses":1}`,
		"past expiry":   `{"count":1,"uses":1,"expiresAt":"2020-01-01T00:00:00Z"}`,
		"zero count":    `{"count":0,"uses":1,"expiresAt":"` + soon + `"}`,
		"too many":      `{"count":1001,"uses":1,"expiresAt":"` + soon + `"}`,
		"zero uses":     `{"count":1,"uses":0,"expiresAt":"` + soon + `"}`,
		"too far ahead": `{"count":1,"uses":1,"expiresAt":"2099-01-01T00:00:00Z"}`,
	} {
		res, b := s.do(t, "POST", "/admin/v1/shows/"+show+"/bypass-codes", "Bearer "+adminToken, body)
		if res.StatusCode != 422 || res.Header.Get("Content-Type") != problem.ContentType {
			t.Errorf("%s: %d %s", name, res.StatusCode, b)
		}
	}
	if res, b := s.do(t, "POST", "/admin/v1/shows/"+show+"/bypass-codes", "Bearer "+adminToken, `{"count":`); res.StatusCode != 400 {
		t.Errorf("malformed: %d %s", res.StatusCode, b)
	}
	for _, m := range []string{"GET", "POST"} {
		if res, _ := s.do(t, m, "/admin/v1/shows/"+show+"/bypass-codes", "Bearer "+s.user(t, "fan"), `{}`); res.StatusCode != http.StatusForbidden {
			t.Errorf("%s by a fan: %d", m, res.StatusCode)
		}
	}
}
