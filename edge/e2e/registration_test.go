package e2e

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/loadtest/browsertest"
	fsclient "github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/platformtest"
	"github.com/flashseat/flashseat/shared/infra/smtptest"
	wrredis "github.com/flashseat/flashseat/waitroom/redis"
)

// Verified-fan sales through the real edge and booking: fans register (paying the show's proof of work), the
// operator draws invitation waves, the access setting refuses the uninvited at the join, and the waves' published
// material alone says who each wave invited.

// call sends a request with a bearer token and a JSON body ("" none) and returns the status and body.
func call(t testing.TB, p *platformtest.Platform, method, path, bearer, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, p.BaseURL+path, strings.NewReader(body))
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// registered is a fan's registration as answered.
type registered struct {
	Status  string `json:"status"`
	Lane    string `json:"lane"`
	WaveID  int    `json:"waveId"`
	FanHash string `json:"fanHash"`
}

// register registers the fan with token tok for show, solving the proof of work the show's guard asks for.
func register(t testing.TB, p *platformtest.Platform, show, tok string) registered {
	t.Helper()
	path := "/api/v1/shows/" + show + "/registration"
	status, b := call(t, p, "POST", path, tok, "")
	if proof, ok := solve(t, status, b); ok {
		status, b = call(t, p, "POST", path, tok, `{"proof":"`+proof+`"}`)
	}
	if status != http.StatusCreated {
		t.Fatalf("register: %d %s", status, b)
	}
	var r registered
	if err := json.Unmarshal(b, &r); err != nil || r.Status != "REGISTERED" {
		t.Fatalf("register: %s (%v)", b, err)
	}
	return r
}

// registration reads the fan's registration.
func registration(t testing.TB, p *platformtest.Platform, show, tok string) registered {
	t.Helper()
	status, b := call(t, p, "GET", "/api/v1/shows/"+show+"/registration", tok, "")
	var r registered
	if status != http.StatusOK || json.Unmarshal(b, &r) != nil {
		t.Fatalf("registration: %d %s", status, b)
	}
	return r
}

// publishedWave is a wave as GET /queue/{show}/waves publishes it.
type publishedWave struct {
	WaveID         int        `json:"waveId"`
	Commitment     string     `json:"commitment"`
	Seed           string     `json:"seed"`
	DrawnAt        *time.Time `json:"drawnAt"`
	Count          int        `json:"count"`
	Eligible       int        `json:"eligible"`
	EligibleSHA256 string     `json:"eligibleSha256"`
	Invited        int        `json:"invited"`
	InvitedSHA256  string     `json:"invitedSha256"`
	DrawnBy        string     `json:"drawnBy"`
}

// drawWave draws a wave as the operator and returns it.
func drawWave(t testing.TB, p *platformtest.Platform, show string, count int) publishedWave {
	t.Helper()
	status, b := call(t, p, "POST", "/admin/v1/shows/"+show+"/invitations", p.AdminToken, fmt.Sprintf(`{"count":%d}`, count))
	var w publishedWave
	if status != http.StatusCreated || json.Unmarshal(b, &w) != nil {
		t.Fatalf("draw a wave: %d %s", status, b)
	}
	return w
}

func published(t testing.TB, p *platformtest.Platform, show string) []publishedWave {
	t.Helper()
	var out struct{ Waves []publishedWave }
	getJSON(t, p.BaseURL+"/queue/"+show+"/waves", &out)
	return out.Waves
}

// mailPlatform is journeyPlatform with booking mailing fans through a test SMTP server.
func mailPlatform(t *testing.T) (*platformtest.Platform, *fsclient.Client, *smtptest.Server) {
	t.Helper()
	mail := smtptest.Start(t)
	p := platformtest.Start(t, platformtest.Options{HoldTTL: 5 * time.Minute, MaxConns: 8,
		Edge: map[string]string{"QUEUE_TICK": "100ms"}, Booking: map[string]string{"SMTP_ADDR": mail.Addr}})
	c, err := fsclient.New(p.BaseURL, http.DefaultTransport, fsclient.Options{AdminToken: p.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	return p, c, mail
}

// codeIn is the six-digit code in the subject of the first message mailed to addr, waiting for it.
func codeIn(t testing.TB, mail *smtptest.Server, addr string) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if subjects := subjectsTo(t, mail, addr); len(subjects) > 0 {
			subject := subjects[0]
			if i := strings.LastIndexByte(subject, ' '); i >= 0 && len(subject)-i-1 == 6 {
				return subject[i+1:]
			}
			t.Fatalf("the code's message: %q", subject)
		}
	}
	t.Fatalf("no code mailed to %s", addr)
	return ""
}

// subjectsTo is the subjects of the messages mailed to addr so far, oldest first.
func subjectsTo(t testing.TB, mail *smtptest.Server, addr string) []string {
	t.Helper()
	var out []string
	for _, m := range mail.Messages() {
		if !slices.Contains(m.To, addr) {
			continue
		}
		msg, err := m.Parse()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, msg.Header.Get("Subject"))
	}
	return out
}

// mailedTo waits for a message to addr whose subject starts with subject.
func mailedTo(t testing.TB, mail *smtptest.Server, addr, subject string) {
	t.Helper()
	var seen []string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		seen = subjectsTo(t, mail, addr)
		for _, got := range seen {
			if strings.HasPrefix(got, subject) {
				return
			}
		}
	}
	t.Errorf("no message %q… to %s; it was sent %q", subject, addr, seen)
}

// confirmedFan is a guest who gave a contact e-mail and confirmed it with the code mailed to it.
func confirmedFan(t testing.TB, p *platformtest.Platform, c *fsclient.Client, mail *smtptest.Server) fsclient.Guest {
	t.Helper()
	g, res, err := c.NewGuest(context.Background())
	if err != nil {
		t.Fatalf("guest: %d %v", res.Status, err)
	}
	addr := strings.ToLower(g.UserID) + "@example.com"
	if s, b := call(t, p, "PUT", "/api/v1/me/contact", g.Token, `{"email":"`+addr+`"}`); s != 200 {
		t.Fatalf("contact: %d %s", s, b)
	}
	if s, b := call(t, p, "POST", "/api/v1/me/contact/confirm", g.Token, `{"code":"000000x"}`); s != 422 {
		t.Fatalf("a malformed code: %d %s", s, b)
	}
	s, b := call(t, p, "POST", "/api/v1/me/contact/confirm", g.Token, `{"code":"`+codeIn(t, mail, addr)+`"}`)
	if s != 200 || !strings.Contains(string(b), `"confirmed":true`) {
		t.Fatalf("confirm: %d %s", s, b)
	}
	return g
}

// invitedShow is a show on sale whose queue lets in only invited fans, admitting one fan a second.
func invitedShow(t *testing.T, title string) (*platformtest.Platform, *fsclient.Client, *smtptest.Server, string) {
	t.Helper()
	p, c, mail := mailPlatform(t)
	show := newShow(t, c, showSpec{title: title + " " + uuid.NewString()[:6], saleIn: -time.Minute, queue: true, admitRate: 1})
	if s, b := call(t, p, "PUT", "/admin/v1/shows/"+show+"/queue", p.AdminToken, `{"access":"invited"}`); s != 200 {
		t.Fatalf("access: %d %s", s, b)
	}
	return p, c, mail, show
}

// tryJoin is one join with no proof: its status, the refusal's reason and its problem type's slug.
func tryJoin(t testing.TB, p *platformtest.Platform, show, tok string) (int, string, string) {
	t.Helper()
	return refusalOf(call(t, p, "POST", "/queue/"+show+"/join", tok, ""))
}

// tryRegister is one registration with no proof, answered as tryJoin answers.
func tryRegister(t testing.TB, p *platformtest.Platform, show, tok string) (int, string, string) {
	t.Helper()
	return refusalOf(call(t, p, "POST", "/api/v1/shows/"+show+"/registration", tok, ""))
}

func refusalOf(status int, b []byte) (int, string, string) {
	var pr struct{ Type, Reason string }
	_ = json.Unmarshal(b, &pr)
	return status, pr.Reason, pr.Type[strings.LastIndexByte(pr.Type, '/')+1:]
}

// TestInvitationRequired: with access "invited" a registered fan not invited is refused at the join with
// invitation-required (before any proof is asked), and so is one never registered; the fan a wave invites joins
// and reads INVITED, the other NOT_INVITED and still registered. With access "registered", a registered fan
// joins and one who never registered is refused with registration-required. After Redis loses the access copy,
// the join rebuilds it from PostgreSQL: the same fans in, the same out.
func TestInvitationRequired(t *testing.T) {
	t.Parallel()
	p, c, mail, show := invitedShow(t, "Hayavadana")
	ctx := context.Background()
	a, b, stranger := confirmedFan(t, p, c, mail), confirmedFan(t, p, c, mail), guestFan(t, c)
	if s, _, slug := tryRegister(t, p, show, stranger.Token); s != 403 || slug != "contact-required" {
		t.Fatalf("a guest with no contact registers: %d %q", s, slug)
	}
	register(t, p, show, a.Token)
	register(t, p, show, b.Token)
	for _, f := range []fsclient.Guest{a, b, stranger} {
		if s, r, slug := tryJoin(t, p, show, f.Token); s != 403 || r != "invitation-required" ||
			slug != "invitation-required" {
			t.Fatalf("an uninvited fan's join: %d reason %q type %q", s, r, slug)
		}
	}
	w := drawWave(t, p, show, 1)
	if w.WaveID != 1 || w.Invited != 1 || w.Eligible != 2 {
		t.Fatalf("the wave: %+v", w)
	}
	in, out := a, b
	if registration(t, p, show, a.Token).Status != "INVITED" {
		in, out = b, a
	}
	if got := registration(t, p, show, out.Token); got.Status != "NOT_INVITED" {
		t.Errorf("the fan left out reads %+v", got)
	}
	// Both are told by mail: the outbox row the draw wrote, relayed and mailed by booking.
	mailedTo(t, mail, strings.ToLower(in.UserID)+"@example.com", "You are invited to the sale for")
	mailedTo(t, mail, strings.ToLower(out.UserID)+"@example.com", "Not invited this time for")
	var mine struct{ Registrations []registered }
	if s, b := call(t, p, "GET", "/api/v1/me/registrations", in.Token, ""); s != 200 || json.Unmarshal(b, &mine) != nil ||
		len(mine.Registrations) != 1 || mine.Registrations[0].Status != "INVITED" {
		t.Errorf("the invited fan's registrations: %d %s", s, b)
	}
	if q, res, err := c.Join(ctx, in.Token, show, ""); err != nil || (q.Status != "waiting" && q.Status != "admitted") {
		t.Fatalf("the invited fan's join: %+v %d %v", q, res.Status, err)
	}
	if s, r, _ := tryJoin(t, p, show, out.Token); s != 403 || r != "invitation-required" {
		t.Fatalf("the fan left out joins: %d %q", s, r)
	}

	// Redis forgets the copy: the next join rebuilds it from the record.
	rdb := goredis.NewClient(mustParse(t, p.RedisURL))
	defer rdb.Close()
	if err := rdb.Del(ctx, wrredis.AccessKeys(show)...).Err(); err != nil {
		t.Fatal(err)
	}
	if s, r, _ := tryJoin(t, p, show, out.Token); s != 403 || r != "invitation-required" {
		t.Fatalf("after the wipe, the fan left out joins: %d %q", s, r)
	}
	late := confirmedFan(t, p, c, mail)
	register(t, p, show, late.Token)
	if err := rdb.Del(ctx, wrredis.AccessKeys(show)...).Err(); err != nil {
		t.Fatal(err)
	}
	if s, b := call(t, p, "PUT", "/admin/v1/shows/"+show+"/queue", p.AdminToken, `{"access":"registered"}`); s != 200 {
		t.Fatalf("access: %d %s", s, b)
	}
	time.Sleep(1500 * time.Millisecond) // the guard reads settings through the gate's second-long cache
	if q, res, err := c.Join(ctx, late.Token, show, ""); err != nil || (q.Status != "waiting" && q.Status != "admitted") {
		t.Fatalf("a registered fan's join after the wipe: %+v %d %v", q, res.Status, err)
	}
	if s, r, _ := tryJoin(t, p, show, stranger.Token); s != 403 || r != "registration-required" {
		t.Fatalf("an unregistered fan's join: %d %q", s, r)
	}
}

func mustParse(t testing.TB, url string) *goredis.Options {
	t.Helper()
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	o, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestWavesRecomputed: three waves over 30 registered fans never invite anyone twice, the last taking the ten
// left though it asked for twenty. Each wave's seed hashes to the commitment published before it was drawn, and
// each wave's invited fans are recomputed from the published material alone (the waves, their eligible lists,
// the recipe's fan hash): the recomputation here shares no code with the waiting room's.
func TestWavesRecomputed(t *testing.T) {
	t.Parallel()
	p, c, mail, show := invitedShow(t, "Naga-Mandala")
	fans := make([]fsclient.Guest, 30)
	for i := range fans {
		fans[i] = confirmedFan(t, p, c, mail)
		register(t, p, show, fans[i].Token)
	}
	var committed []string // each wave's commitment as published before its draw
	for _, n := range []int{10, 10, 20} {
		ws := published(t, p, show)
		next := ws[len(ws)-1]
		if next.DrawnAt != nil || next.Seed != "" || next.Commitment == "" {
			t.Fatalf("the next wave as published before its draw: %+v", next)
		}
		committed = append(committed, next.Commitment)
		drawWave(t, p, show, n)
	}
	byWave := map[int][]string{} // the fans' hashes each wave invited, from the fans' own statuses
	for _, f := range fans {
		r := registration(t, p, show, f.Token)
		want := sha256.Sum256([]byte("flashseat registration v1\x00" + show + "\x00" + f.UserID))
		if r.Status != "INVITED" || r.FanHash != hex.EncodeToString(want[:]) {
			t.Fatalf("after three waves a fan reads %+v", r)
		}
		byWave[r.WaveID] = append(byWave[r.WaveID], r.FanHash)
	}
	if len(byWave[1]) != 10 || len(byWave[2]) != 10 || len(byWave[3]) != 10 {
		t.Fatalf("invited by wave: %d, %d, %d", len(byWave[1]), len(byWave[2]), len(byWave[3]))
	}
	ws := published(t, p, show)
	for i, w := range ws[:3] {
		got := recompute(t, p, show, w)
		if seed, _ := hex.DecodeString(w.Seed); hex.EncodeToString(sha(seed)) != committed[i] || w.Commitment != committed[i] {
			t.Errorf("wave %d: its seed does not hash to the commitment published before it", w.WaveID)
		}
		slices.Sort(got)
		slices.Sort(byWave[w.WaveID])
		if !slices.Equal(got, byWave[w.WaveID]) {
			t.Errorf("wave %d recomputed invites %v, the fans read %v", w.WaveID, got, byWave[w.WaveID])
		}
		if w.DrawnBy != "" {
			t.Errorf("the published waves name the operator: %q", w.DrawnBy)
		}
	}
}

func sha(b []byte) []byte { s := sha256.Sum256(b); return s[:] }

// recompute follows the published recipe for wave w: its eligible list, checked against the digest, ordered by
// HMAC-SHA256 under the revealed seed; it returns the invited fans' hashes, checked against their digest.
func recompute(t *testing.T, p *platformtest.Platform, show string, w publishedWave) []string {
	t.Helper()
	res, err := client.Get(fmt.Sprintf("%s/queue/%s/waves/%d/eligible", p.BaseURL, show, w.WaveID))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || hex.EncodeToString(sha(body)) != w.EligibleSHA256 {
		t.Fatalf("wave %d's eligible list: %d, digest differs from %s", w.WaveID, res.StatusCode, w.EligibleSHA256)
	}
	lines := strings.Split(string(body), "\n")
	if len(lines) != w.Eligible {
		t.Fatalf("wave %d lists %d fans, says %d", w.WaveID, len(lines), w.Eligible)
	}
	key, _ := hex.DecodeString(w.Seed)
	type ranked struct {
		mac  []byte
		hash string
	}
	rs := make([]ranked, len(lines))
	for i, l := range lines {
		m := hmac.New(sha256.New, key)
		raw, _ := hex.DecodeString(l)
		m.Write(raw)
		rs[i] = ranked{m.Sum(nil), l}
	}
	slices.SortFunc(rs, func(a, b ranked) int {
		if c := bytes.Compare(a.mac, b.mac); c != 0 {
			return c
		}
		return strings.Compare(a.hash, b.hash)
	})
	n := min(w.Count, len(rs))
	out := make([]string, n)
	for i := range out {
		out[i] = rs[i].hash
	}
	if got := hex.EncodeToString(sha([]byte(strings.Join(out, "\n")))); got != w.InvitedSHA256 || n != w.Invited {
		t.Fatalf("wave %d: recomputed %d invited with digest %s, published %d with %s", w.WaveID, n, got, w.Invited,
			w.InvitedSHA256)
	}
	return out
}

// TestWaveBadInput: a wave's count missing, 0 or negative, an unknown lane, and a misspelt access setting are
// each a 422 problem naming the field; a wave before anyone registered is a 409.
func TestWaveBadInput(t *testing.T) {
	t.Parallel()
	p, c := journeyPlatform(t)
	show := newShow(t, c, showSpec{title: "Tughlaq " + uuid.NewString()[:6], saleIn: time.Hour, queue: true})
	inv := "/admin/v1/shows/" + show + "/invitations"
	for _, tc := range []struct{ name, path, method, body, field string }{
		{"count missing", inv, "POST", `{}`, "count"},
		{"count 0", inv, "POST", `{"count":0}`, "count"},
		{"count negative", inv, "POST", `{"count":-5}`, "count"},
		{"unknown lane", inv, "POST", `{"count":5,"lane":"vip"}`, "lane"},
		{"misspelt member", inv, "POST", `{"cuont":5}`, "cuont"},
		{"access misspelt", "/admin/v1/shows/" + show + "/queue", "PUT", `{"access":"invitd"}`, "access"},
	} {
		s, b := call(t, p, tc.method, tc.path, p.AdminToken, tc.body)
		var pr struct{ Type, Detail string }
		if s != 422 || json.Unmarshal(b, &pr) != nil || !strings.HasSuffix(pr.Type, "/validation") ||
			!strings.Contains(pr.Detail, tc.field) {
			t.Errorf("%s: %d %s", tc.name, s, b)
		}
	}
	if s, b := call(t, p, "POST", inv, p.AdminToken, `{"count":5}`); s != 409 {
		t.Errorf("a wave before any registration: %d %s", s, b)
	}
	// Once the show has the lane, a wave may name it (and is refused only for want of registrations).
	if s, b := call(t, p, "PUT", "/admin/v1/shows/"+show+"/queue", p.AdminToken,
		`{"lanes":[{"name":"vip","share":0.7},{"name":"general","share":0.3}]}`); s != 200 {
		t.Fatalf("lanes: %d %s", s, b)
	}
	if s, b := call(t, p, "POST", inv, p.AdminToken, `{"count":5,"lane":"vip"}`); s != 409 {
		t.Errorf("a wave into the show's lane before any registration: %d %s", s, b)
	}
	if s, b := call(t, p, "GET", "/api/v1/shows/"+show+"/registration", guestFan(t, c).Token, ""); s != 404 {
		t.Errorf("an unregistered fan's registration: %d %s", s, b)
	}
}

// TestVerifiedFanInBrowser: on a show whose queue lets in only invited fans, a fan opens the queue page, is told
// why they may not join and offered registration: they give an e-mail, read the code mailed to it (the test's
// SMTP server), confirm it and register, paying the show's proof of work. The operator, in the console's
// Invitations panel, draws a wave of one; the fan's page hears of the invitation and takes them into the line.
// All through the real edge and booking; no route is stubbed and any console error fails.
func TestVerifiedFanInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser")
	}
	t.Parallel()
	p, _, mail, show := invitedShow(t, "Yayati")
	br := browsertest.New(t)
	text := textOf
	set := func(f *browsertest.Fan, sel, v string) {
		f.JS(`(() => { const e = document.querySelector(` + strconv.Quote(sel) + `); e.value = ` + strconv.Quote(v) +
			`; e.dispatchEvent(new Event("input")); })()`)
	}

	fan := br.Fan("registering fan", 3*time.Minute)
	fan.Go(p.BaseURL + "/queue/" + show)
	fan.WaitFor("registration offered", `!document.getElementById("register").hidden && `+
		`!document.getElementById("register-email-form").hidden`)
	for _, id := range []string{"register-email", "register-name", "register-code"} {
		if got := fan.Text(`document.getElementById("` + id + `").labels[0]?.textContent ?? ""`); got == "" {
			t.Errorf("#%s has no label", id)
		}
	}
	addr := "fan-" + uuid.NewString()[:8] + "@example.com"
	set(fan, "#register-email", addr)
	set(fan, "#register-name", "Asha Rao")
	fan.JS(`document.getElementById("register-send").click()`)
	fan.WaitFor("the code's form", `!document.getElementById("register-code-form").hidden`)
	set(fan, "#register-code", codeIn(t, mail, addr))
	fan.JS(`document.getElementById("register-confirm").click()`)
	fan.WaitFor("registered", text("#register-status")+`.startsWith("You are registered")`)
	if got := fan.Await(`fetch("/api/v1/me/contact").then((r) => r.json()).then((c) => c.name + " <" + c.email + ">")`); got != "Asha Rao <"+addr+">" {
		t.Errorf("the fan's contact after registering: %q, want the name on tickets given", got)
	}
	if fan.Path() != "/queue/"+show || fan.Text(`String(document.getElementById("waiting").hidden)`) != "true" {
		t.Fatalf("registered but not invited, the fan is in line at %s", fan.Path())
	}

	op := br.Fan("operator", 3*time.Minute)
	op.Go(p.BaseURL + "/admin")
	op.WaitFor("the sign-in form", `!document.getElementById("signin").hidden`)
	set(op, "#token", p.AdminToken)
	set(op, "#opname", "Ravi")
	op.JS(`document.querySelector('#signin-form button[type="submit"]').click()`)
	op.WaitFor("the show in the Invitations panel", `[...document.getElementById("waves-show").options].some((o) => o.value === "`+show+`")`)
	op.JS(`(() => { const s = document.getElementById("waves-show"); s.value = "` + show + `"; s.dispatchEvent(new Event("change")); })()`)
	op.WaitFor("the panel", `!document.getElementById("waves-panel").hidden && `+text("#waves tbody")+`.includes("No wave drawn")`)
	if got := op.Text(`document.getElementById("waves-access").value`); got != "invited" {
		t.Errorf("the panel's access: %q", got)
	}
	for _, id := range []string{"waves-count", "waves-lane", "waves-access"} {
		if got := op.Text(`document.getElementById("` + id + `").labels[0]?.textContent ?? ""`); got == "" {
			t.Errorf("#%s has no label", id)
		}
	}
	set(op, "#waves-count", "1")
	op.JS(`document.querySelector('#waves-form button[type="submit"]').click()`)
	op.WaitFor("the wave", text("#waves-result")+`.startsWith("Wave 1 invited 1 of 1")`)
	op.WaitFor("the wave listed", text("#waves tbody")+`.includes("Wave 1")`)

	fan.WaitFor("let into the queue", `location.pathname === "/shows/`+show+`" || !document.getElementById("waiting").hidden`)

	// My bookings lists the sale and the fan's status in it.
	fan.Go(p.BaseURL + "/bookings")
	fan.WaitFor("the registration in My bookings", `document.querySelector('#registrations li[data-show="`+show+`"]')?.`+
		`textContent.includes("Invited") === true && !document.getElementById("registrations").hidden`)
}
