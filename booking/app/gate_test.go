package app_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking/ticket"
	"github.com/flashseat/flashseat/booking/ticket/tickettest"
	"github.com/flashseat/flashseat/shared/token"
)

// holderCode is GET /api/v1/tickets/{id}/code decoded: the code and what the phone makes the next ones with.
type holderCode struct {
	Code, Certificate, CertificateSignature, HolderKey string
	ValidUntil, ServerTime                             time.Time
	RotatesEverySeconds                                int
}

func (st *stack) holderCode(fan, ticketID string) holderCode {
	st.t.Helper()
	a := st.do("GET", "/api/v1/tickets/"+ticketID+"/code", fan, nil)
	var hc holderCode
	if a.status != 200 || json.Unmarshal(a.body, &hc) != nil || hc.Code == "" {
		st.t.Fatalf("code of %s: %d %s", ticketID, a.status, a.body)
	}
	if a.header.Get("Cache-Control") != "no-store" {
		st.t.Fatalf("code's Cache-Control %q, want no-store", a.header.Get("Cache-Control"))
	}
	return hc
}

// stamp makes hc's ticket's code at at, as the holder's page does with the answer's material alone.
func (hc holderCode) stamp(t testing.TB, at time.Time) string {
	t.Helper()
	cert, err1 := base64.RawURLEncoding.DecodeString(hc.Certificate)
	sig, err2 := base64.RawURLEncoding.DecodeString(hc.CertificateSignature)
	seed, err3 := base64.RawURLEncoding.DecodeString(hc.HolderKey)
	if err1 != nil || err2 != nil || err3 != nil || len(seed) != ed25519.SeedSize {
		t.Fatalf("holder material %+v", hc)
	}
	return ticket.MakeCode(cert, sig, ed25519.NewKeyFromSeed(seed), at)
}

func (st *stack) checkIn(code string) answer {
	return st.do("POST", "/api/v1/checkin", staffToken, map[string]any{"code": code})
}

func wantType(t testing.TB, a answer, status int, slug string) {
	t.Helper()
	if p := a.problem(t, status); !strings.HasSuffix(p.Type, "/"+slug) {
		t.Fatalf("problem %+v, want %s", p, slug)
	}
}

type scanResult struct {
	TicketID, Status, FirstDevice, Reason string
	FirstAt                               time.Time
}

func (st *stack) scans(show, device string, scans ...any) []scanResult {
	st.t.Helper()
	a := st.do("POST", "/api/v1/shows/"+show+"/gate-scans", staffToken, map[string]any{"deviceId": device, "scans": scans})
	var out struct{ Results []scanResult }
	if a.status != 200 || json.Unmarshal(a.body, &out) != nil || len(out.Results) != len(scans) {
		st.t.Fatalf("gate-scans of %s: %d %s", device, a.status, a.body)
	}
	return out.Results
}

func scan(code string, at time.Time) map[string]any {
	return map[string]any{"code": code, "scannedAt": at}
}

// TestRotatingCodesOverHTTP: a show switched to rotating codes hands its holders a fresh code and the material
// to make more, refuses screenshots, future stamps, other shows' codes and its static codes, its PDF, pass and
// QR image; its door kit holds nothing that makes a code; offline scans come back first-wins.
func TestRotatingCodesOverHTTP(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, wwdr, cert, key := passCerts(t, dir)
	st := newStack(t, "PASS_CERT_FILE", cert, "PASS_KEY_FILE", key, "PASS_WWDR_FILE", wwdr,
		"PASS_TYPE_ID", "pass.test.flashseat", "PASS_TEAM_ID", "TEAM123456")
	show, other := st.show(), st.show()
	fan := st.guest()
	b, tickets := st.paidTickets(fan, show, "A1", "A2", "A3")
	a1, a2, a3 := tickets["A1"]["ticketId"].(string), tickets["A2"]["ticketId"].(string), tickets["A3"]["ticketId"].(string)
	static2 := tickets["A2"]["code"].(string)
	if tickets["A1"]["ticketCodes"] != "static" || static2 == "" {
		t.Fatalf("a static show's ticket %v", tickets["A2"])
	}
	wantType(t, st.do("GET", "/api/v1/tickets/"+a1+"/code", fan, nil), 409, "static-codes")

	// The setting.
	for _, bad := range []string{`{"ticketCodes":"totp"}`, `{"ticketCodes":""}`, `{"ticketCodes":7}`, `{"ticketcode":"rotating"}`} {
		if a := st.do("PUT", "/admin/v1/shows/"+show, adminToken, bad); a.status/100 != 4 || !strings.Contains(strings.ToLower(string(a.body)), "ticketcode") {
			t.Fatalf("PUT %s: %d %s", bad, a.status, a.body)
		}
	}
	wantType(t, st.do("PUT", "/admin/v1/shows/"+show, adminToken, `{"ticketCodes":"totp"}`), 422, "validation")
	for _, sh := range []string{show, other} {
		if a := st.do("PUT", "/admin/v1/shows/"+sh, adminToken, `{"ticketCodes":"rotating"}`); a.status != 200 || a.json(t)["ticketCodes"] != "rotating" {
			t.Fatalf("PUT rotating: %d %s", a.status, a.body)
		}
	}
	if g := st.do("GET", "/admin/v1/shows/"+show, adminToken, nil).json(t); g["ticketCodes"] != "rotating" {
		t.Fatalf("GET admin show: %v", g)
	}

	// What the holder sees and can download.
	view := st.do("GET", "/api/v1/bookings/"+b, fan, nil).json(t)
	for _, x := range view["tickets"].([]any) {
		if tk := x.(map[string]any); tk["code"] != nil || tk["ticketCodes"] != "rotating" {
			t.Fatalf("a rotating show's booking lists ticket %v", tk)
		}
	}
	if tk := st.do("GET", "/api/v1/tickets/"+a1, fan, nil).json(t); tk["code"] != nil || tk["ticketCodes"] != "rotating" {
		t.Fatalf("GET ticket: %v", tk)
	}
	wantType(t, st.do("GET", "/api/v1/bookings/"+b+"/tickets.pdf", fan, nil), 409, "rotating-codes")
	wantType(t, st.do("GET", "/api/v1/tickets/"+a1+"/pass.pkpass", fan, nil), 409, "rotating-codes")
	wantType(t, st.do("GET", "/api/v1/tickets/"+a1+"/qr.png", fan, nil), 409, "rotating-codes")
	st.do("GET", "/api/v1/tickets/"+a1+"/code", st.guest(), nil).problem(t, 404)
	st.do("GET", "/api/v1/tickets/"+a1+"/code", "", nil).problem(t, 401)

	hc := st.holderCode(fan, a1)
	if hc.RotatesEverySeconds != 15 || time.Since(hc.ServerTime).Abs() > 5*time.Second ||
		hc.ValidUntil.Sub(hc.ServerTime) < 29*time.Second || hc.ValidUntil.Sub(hc.ServerTime) > 30*time.Second {
		t.Fatalf("holder code %+v", hc)
	}
	now := time.Now()
	wantType(t, st.checkIn(static2), 409, "rotating-codes")
	wantType(t, st.checkIn(hc.stamp(t, now.Add(-40*time.Second))), 409, "code-expired") // a screenshot
	wantType(t, st.checkIn(hc.stamp(t, now.Add(time.Minute))), 400, "ticket-invalid")   // stamped in the future
	if c := st.checkIn(hc.Code); c.status != 200 || c.json(t)["status"] != "CHECKED_IN" {
		t.Fatalf("check-in of the fresh code: %d %s", c.status, c.body)
	}
	wantType(t, st.checkIn(hc.stamp(t, time.Now())), 409, "already-checked-in")

	// The door's kit: staff or admin, public material only.
	st.do("GET", "/api/v1/shows/"+show+"/gate-kit", "", nil).problem(t, 401)
	st.do("GET", "/api/v1/shows/"+show+"/gate-kit", fan, nil).problem(t, 403)
	ka := st.do("GET", "/api/v1/shows/"+show+"/gate-kit", staffToken, nil)
	var kit struct {
		ShowID, TicketCodes                             string
		Keys                                            []struct{ Kid, X string }
		MaxAgeSeconds, SkewSeconds, RotatesEverySeconds int
		Tickets                                         []struct {
			TicketID, SeatID, Category string
			CheckedIn                  bool
		}
	}
	if ka.status != 200 || json.Unmarshal(ka.body, &kit) != nil || kit.ShowID != show || kit.TicketCodes != "rotating" ||
		len(kit.Keys) != 1 || kit.MaxAgeSeconds != 30 || kit.SkewSeconds != 5 || kit.RotatesEverySeconds != 15 || len(kit.Tickets) != 3 {
		t.Fatalf("gate kit: %d %s", ka.status, ka.body)
	}
	for _, tk := range kit.Tickets {
		if tk.Category != "GOLD" || tk.CheckedIn != (tk.TicketID == a1) {
			t.Fatalf("kit ticket %+v", tk)
		}
	}
	if st.do("GET", "/api/v1/shows/"+show+"/gate-kit", adminToken, nil).status != 200 {
		t.Fatal("the admin token is refused the kit")
	}

	// A door cannot mint: everything in the kit, and a code it saw, used as seeds and keys, makes nothing that
	// the kit (offline) or the server (online) accepts.
	hc2 := st.holderCode(fan, a2)
	seen := hc2.stamp(t, now)
	pub, _ := base64.RawURLEncoding.DecodeString(kit.Keys[0].X)
	offline := &ticket.Kit{ShowID: show, Keys: token.StaticKeys{kit.Keys[0].Kid: pub}, Tickets: map[string]bool{a2: true, a3: true}}
	if _, err := offline.Verify(seen, time.Now()); err != nil {
		t.Fatalf("the kit refuses a holder's code: %v", err)
	}
	seenCert, _ := base64.RawURLEncoding.DecodeString(hc2.Certificate)
	seenSig, _ := base64.RawURLEncoding.DecodeString(hc2.CertificateSignature)
	material := byteStrings(ka.body)
	for _, p := range strings.Split(seen, ".") {
		raw, _ := base64.RawURLEncoding.DecodeString(p)
		material = append(material, raw)
	}
	tried := map[string]bool{}
	for _, m := range material {
		for _, k := range tickettest.KeysFrom(m) {
			if tried[string(k.Seed())] {
				continue
			}
			tried[string(k.Seed())] = true
			forger, _ := ticket.NewSigner(token.Key{ID: kit.Keys[0].Kid, Private: k})
			fh, err := forger.Certify(a2, show, "A2", time.Now().Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			for _, code := range []string{ticket.MakeCode(seenCert, seenSig, k, time.Now()), fh.Stamp(time.Now())} {
				if _, err := offline.Verify(code, time.Now()); err == nil {
					t.Fatalf("the kit accepted a code made of its own material %x", m)
				}
				if c := st.checkIn(code); c.status != 400 {
					t.Fatalf("check-in of a code made of the kit's material %x: %d %s", m, c.status, c.body)
				}
			}
		}
	}
	if len(tried) < 20 {
		t.Fatalf("tried %d keys only: the kit's material was not read", len(tried))
	}

	// Another show's code, and a static code, at this show's door.
	ob, ots := st.paidTickets(fan, other, "A1")
	_ = ob
	otherCode := st.holderCode(fan, ots["A1"]["ticketId"].(string)).Code
	rs := st.scans(show, "door-1", scan(otherCode, time.Now()), scan(static2, time.Now()))
	if rs[0].Status != "refused" || rs[0].Reason != "ticket-invalid" || rs[1].Status != "refused" || rs[1].Reason != "rotating-codes" {
		t.Fatalf("foreign and static codes at the door: %+v", rs)
	}

	// Offline scans: first wins, a resend is a duplicate, another device's later scan a conflict, an earlier
	// one takes the check-in over; an online check-in is the first of a later offline scan.
	code2 := hc2.stamp(t, now.Add(-12*time.Second))
	if rs := st.scans(show, "door-1", scan(code2, now.Add(-10*time.Second))); rs[0].Status != "admitted" || rs[0].TicketID != a2 || rs[0].FirstDevice != "door-1" {
		t.Fatalf("first scan: %+v", rs)
	}
	if rs := st.scans(show, "door-1", scan(code2, now.Add(-10*time.Second))); rs[0].Status != "duplicate" || rs[0].FirstDevice != "door-1" {
		t.Fatalf("resend: %+v", rs)
	}
	if rs := st.scans(show, "door-2", scan(code2, now.Add(-5*time.Second))); rs[0].Status != "conflict" || rs[0].FirstDevice != "door-1" ||
		!rs[0].FirstAt.Equal(now.Add(-10*time.Second).Truncate(time.Microsecond)) {
		t.Fatalf("another device's later scan: %+v", rs)
	}
	if rs := st.scans(show, "door-3", scan(code2, now.Add(-11*time.Second))); rs[0].Status != "admitted" || rs[0].FirstDevice != "door-3" {
		t.Fatalf("an earlier scan heard later: %+v", rs)
	}
	if rs := st.scans(show, "door-2", scan(hc.stamp(t, now), now.Add(time.Second))); rs[0].Status != "conflict" || rs[0].FirstDevice != "staff" {
		t.Fatalf("an offline scan of a ticket checked in online: %+v", rs)
	}
	if rs := st.scans(show, "door-1", scan(hc.stamp(t, now.Add(-time.Minute)), now)); rs[0].Status != "refused" || rs[0].Reason != "code-expired" {
		t.Fatalf("an expired code scanned offline: %+v", rs)
	}
	st.do("POST", "/api/v1/shows/"+show+"/gate-scans", staffToken, map[string]any{"deviceId": "", "scans": []any{scan(code2, now)}}).problem(t, 422)
	st.do("POST", "/api/v1/shows/"+show+"/gate-scans", staffToken, map[string]any{"deviceId": "d", "scans": []any{}}).problem(t, 422)
	st.do("POST", "/api/v1/shows/"+show+"/gate-scans", staffToken, map[string]any{"deviceId": "d", "scans": []any{}, "x": 1}).problem(t, 422)
	st.do("POST", "/api/v1/shows/"+show+"/gate-scans", fan, map[string]any{"deviceId": "d", "scans": []any{scan(code2, now)}}).problem(t, 403)

	var conflicts struct {
		Conflicts []struct {
			TicketID, SeatID string
			First, Second    struct {
				DeviceID string
				At       time.Time
			}
		}
	}
	ca := st.do("GET", "/admin/v1/shows/"+show+"/gate-conflicts", adminToken, nil)
	if ca.status != 200 || json.Unmarshal(ca.body, &conflicts) != nil {
		t.Fatalf("conflicts: %d %s", ca.status, ca.body)
	}
	got := map[string]string{}
	for _, c := range conflicts.Conflicts {
		got[c.SeatID+" "+c.Second.DeviceID] = c.First.DeviceID
	}
	want := map[string]string{"A2 door-1": "door-3", "A2 door-2": "door-3", "A1 door-2": "staff"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("conflicts %v, want %v (%s)", got, want, ca.body)
	}
	st.do("GET", "/admin/v1/shows/"+show+"/gate-conflicts", staffToken, nil).problem(t, 403)
}

// TestGateScansConcurrent: two devices syncing scans of the same tickets at the same instant, in parallel: each
// ticket is admitted once and is a conflict once, whatever the interleaving.
func TestGateScansConcurrent(t *testing.T) {
	t.Parallel()
	st := newStack(t)
	show := st.show()
	fan := st.guest()
	st.do("PUT", "/admin/v1/shows/"+show, adminToken, `{"ticketCodes":"rotating"}`)
	seats := []string{"A1", "A2", "A3", "A4", "A5", "A6"}
	_, tickets := st.paidTickets(fan, show, seats...)
	at := time.Now().Add(-2 * time.Second)
	var scans []any
	for _, s := range seats {
		scans = append(scans, scan(st.holderCode(fan, tickets[s]["ticketId"].(string)).stamp(t, at), at))
	}
	for round := 0; round < 3; round++ {
		var wg sync.WaitGroup
		results := make([][]scanResult, 2)
		for d := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[d] = st.scans(show, fmt.Sprintf("door-%d", d), scans...)
			}()
		}
		wg.Wait()
		for i := range seats {
			statuses := []string{results[0][i].Status, results[1][i].Status}
			want := map[int]string{0: "admitted", 1: "conflict"}
			if round > 0 {
				want = map[int]string{0: "duplicate", 1: "duplicate"}
			}
			n := map[string]int{}
			for _, s := range statuses {
				n[s]++
			}
			if round == 0 && (n["admitted"] != 1 || n["conflict"] != 1) || round > 0 && n["duplicate"] != 2 {
				t.Fatalf("round %d seat %s: %v, want %v", round, seats[i], statuses, want)
			}
			if results[0][i].FirstDevice != results[1][i].FirstDevice {
				t.Fatalf("seat %s: the devices were told two firsts: %+v", seats[i], results)
			}
		}
	}
	var conflicts struct{ Conflicts []any }
	if a := st.do("GET", "/admin/v1/shows/"+show+"/gate-conflicts", adminToken, nil); json.Unmarshal(a.body, &conflicts) != nil ||
		len(conflicts.Conflicts) != len(seats) {
		t.Fatalf("conflicts: %s", a.body)
	}
}

// byteStrings is every string of a JSON document as the byte strings a forger could read it as: its bytes,
// and its base64 decodings.
func byteStrings(doc []byte) [][]byte {
	var v any
	_ = json.Unmarshal(doc, &v)
	var out [][]byte
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				out = append(out, []byte(k))
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case string:
			out = append(out, []byte(x))
			for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.URLEncoding, base64.StdEncoding, base64.RawStdEncoding} {
				if b, err := enc.DecodeString(x); err == nil {
					out = append(out, b)
				}
			}
		}
	}
	walk(v)
	return out
}
