package e2e

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"image/gif"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/flashseat/flashseat/booking/ticket"
	"github.com/flashseat/flashseat/booking/ticket/qr"
	"github.com/flashseat/flashseat/loadtest/browsertest"
	fsclient "github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/platformtest"
)

// TestRotatingCodesInBrowser: issue #37's rotating codes, as a fan and two doors meet them, through the real edge
// and booking with the show's queue on. The fan buys three seats of a rotating-code show on the seat map; the
// booking page draws each ticket's code itself and makes a new one every 15 s (the QR image's text changes,
// with "Updates every 15 s" and a countdown beside it), and the new code checks in with the staff token.
//
// Then the door page, /gate, with Chromium's fake camera showing a fresh code of another seat (written here as a
// video file from the holder's /code, as the phone would draw it): door X signs in with the staff token, picks
// the show, downloads its gate kit and admits the code, checked on the device and by the server, and refuses a
// screenshot of another ticket's code as expired. Cut off from
// the network, X admits a third ticket on the kit alone and keeps it to sync; door Y, offline too, admits the
// same ticket. Back online, X's scan syncs as admitted and Y's as a conflict, which the operator's
// gate-conflicts lists; the page loads offline once loaded (its service worker).
func TestRotatingCodesInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser")
	}
	t.Parallel()
	began := time.Now()
	step := func(what string) { t.Logf("%6.1f s: %s", time.Since(began).Seconds(), what) } // where a slow run's time went
	staff := "staff_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	p := platformtest.Start(t, platformtest.Options{HoldTTL: 5 * time.Minute, MaxConns: 8,
		Edge: map[string]string{"QUEUE_TICK": "100ms"}, Booking: map[string]string{"STAFF_TOKEN": staff}})
	c, err := fsclient.New(p.BaseURL, http.DefaultTransport, fsclient.Options{AdminToken: p.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	show := newShow(t, c, showSpec{title: "Hayavadana " + uuid.NewString()[:6], saleIn: -time.Minute, queue: true, admitRate: 5})
	admin(t, p, "PUT", "/admin/v1/shows/"+show, `{"ticketCodes":"rotating"}`, nil)

	camera := filepath.Join(t.TempDir(), "camera.y4m")
	writeCamera(t, camera, "")
	br := browsertest.New(t, browsertest.FakeCamera(camera)...)
	fan := br.Fan("holder", 5*time.Minute)
	id := holdOnSeatMap(t, fan, p.BaseURL, show, "B3", "B4", "B5")
	step("paying")
	typeCard(fan, cardOK)
	confirmed(t, fan, id, 3)

	// (a) The code rotates on the phone, and the new one checks in.
	li := func(seat string) string {
		return `[...document.querySelectorAll("#tickets li.ticket")].find((li) => li.querySelector("h2").textContent.startsWith("Seat ` + seat + `"))`
	}
	img := li("B3") + `.querySelector("figure.rotating img")`
	fan.WaitFor("B3's rotating code", img+`?.dataset.code?.split(".").length === 4`)
	if got := fan.Text(li("B3") + `.querySelector("figcaption").textContent`); !strings.HasPrefix(got, "Updates every 15 s · next in ") {
		t.Errorf("the code's caption: %q", got)
	}
	if fan.Text(`String(document.getElementById("pdf").hidden)`) != "true" {
		t.Error("the PDF download is offered for a rotating show")
	}
	first := decodeDataQR(t, fan.Text(img+`.src`))
	if want := fan.Text(img + `.dataset.code`); first != want {
		t.Fatalf("the QR image reads %q, the page says %q", first, want)
	}
	fan.WaitFor("the next code", img+`.dataset.code !== `+jsString(first))
	second := decodeDataQR(t, fan.Text(img+`.src`))
	if second == first || strings.Split(second, ".")[0] != strings.Split(first, ".")[0] {
		t.Fatalf("after 15 s the code went from %q to %q, want a new stamp of the same certificate", first, second)
	}
	if st := staffCheckIn(t, p, staff, second); st != http.StatusOK {
		t.Fatalf("the rotated code at the door: %d, want 200", st)
	}

	step("the code rotated and checked in")
	// (b) The door page. The camera shows a fresh code of B4, as the holder's phone would make it.
	ticketOf := func(seat string) string { return fan.Text(li(seat) + `.dataset.ticket`) }
	holder := fan.Cookie("fs_session")
	b4, b5 := ticketOf("B4"), ticketOf("B5")
	b4code := holderCode(t, p, holder, b4)
	writeCamera(t, camera, b4code)
	x := br.Fan("door X", 5*time.Minute)
	openGate(t, x, p, staff, show)
	x.JS(`document.getElementById("camera").click()`)
	x.WaitFor("ADMIT", `document.getElementById("verdict").dataset.state === "admit"`)
	if got := x.Text(`document.getElementById("verdict").textContent`); !strings.Contains(got, "ADMIT") || !strings.Contains(got, "Seat B4") {
		t.Errorf("door X shows %q", got)
	}
	if got := x.Text(`document.getElementById("verdict").dataset.ticket`); got != b4 {
		t.Errorf("admitted ticket %q, want %q", got, b4)
	}
	// The server checked it in: the same code again is refused there.
	if st := staffCheckIn(t, p, staff, b4code); st != http.StatusConflict {
		t.Errorf("B4 after the door admitted it: %d, want 409", st)
	}

	step("door X admitted B4")
	// A screenshot of B5's code from 40 s ago is refused as expired, then B5's live code is let in.
	writeCamera(t, camera, holderCodeAt(t, p, holder, b5, time.Now().Add(-40*time.Second)))
	x.WaitFor("REFUSED", `document.getElementById("verdict").dataset.state === "refuse"`)
	if got, reason := x.Text(`document.getElementById("verdict").textContent`), x.Text(`document.getElementById("verdict").dataset.reason`); reason != "code-expired" || !strings.Contains(got, "REFUSED") || !strings.Contains(got, "Expired code") {
		t.Errorf("a screenshot at door X: %q (%s)", got, reason)
	}

	step("the screenshot refused")
	// Offline, X admits B5 on the kit alone and keeps the scan.
	offline(t, x, true)
	x.WaitFor("offline shown", `document.getElementById("net").dataset.online === "false"`)
	x.JS(`document.getElementById("camera").click()`) // stop, then start on the new picture
	writeCamera(t, camera, holderCode(t, p, holder, b5))
	x.JS(`document.getElementById("camera").click()`)
	x.WaitFor("ADMIT offline", `document.getElementById("verdict").dataset.state === "admit" && document.getElementById("verdict").dataset.ticket === "`+b5+`"`)
	x.WaitFor("one scan waiting", `document.getElementById("pending").dataset.count === "1"`)
	x.JS(`document.getElementById("camera").click()`)

	step("door X admitted B5 offline")
	// Door Y downloads the kit, goes offline and admits B5 too.
	y := br.Fan("door Y", 5*time.Minute)
	openGate(t, y, p, staff, show)
	offline(t, y, true)
	writeCamera(t, camera, holderCode(t, p, holder, b5))
	y.JS(`document.getElementById("camera").click()`)
	y.WaitFor("ADMIT offline", `document.getElementById("verdict").dataset.state === "admit" && document.getElementById("verdict").dataset.ticket === "`+b5+`"`)
	y.WaitFor("one scan waiting", `document.getElementById("pending").dataset.count === "1"`)
	y.JS(`document.getElementById("camera").click()`)

	step("door Y admitted B5 offline")
	// Offline, the page still opens from its service worker, with the kit and the scan waiting.
	x.Go(p.BaseURL + "/gate")
	x.WaitFor("the kit offline", `document.getElementById("kit-info").dataset.show === "`+show+`" && document.getElementById("pending").dataset.count === "1"`)

	step("door X reloaded offline")
	// Back online, X's scan syncs first (admitted), then Y's (a conflict). X's browser does not say it is back
	// (navigator.onLine can lag the network, and no online event comes): its page syncs on its interval all the same.
	// The answer to its first sync is lost on the way back: the platform has the scan, the page heard nothing, and
	// the next sync learns that its scan is the one that admitted B5.
	x.JS(`Object.defineProperty(navigator, "onLine", { configurable: true, get: () => false })`)
	x.LoseAnswers("*/gate-scans", 1)
	conditions(t, x, false)
	x.WaitFor("synced", `document.getElementById("pending").dataset.count === "0"`)
	if got, text := x.Text(`document.querySelector('#sync-results li[data-ticket="`+b5+`"]')?.dataset.status ?? "none"`),
		x.Text(`document.getElementById("sync-results").textContent`); got != "admitted" || !strings.Contains(text, "admitted (synced)") {
		t.Errorf("door X's sync, its first answer lost: %s, %q; want admitted", got, text)
	}
	if n := countURLs(x, "/gate-scans"); n < 2 {
		t.Errorf("door X sent its scans %d times, want the lost one and the one heard", n)
	}
	step("door X synced")
	offline(t, y, false)
	y.WaitFor("the conflict", `document.querySelector('#sync-results li[data-ticket="`+b5+`"]')?.dataset.status === "conflict"`)
	if got := y.Text(`document.querySelector("#sync-results li").textContent`); !strings.Contains(got, "conflict") || !strings.Contains(got, "Seat B5") {
		t.Errorf("door Y's sync result: %q", got)
	}
	var conflicts struct {
		Conflicts []struct {
			TicketID string `json:"ticketId"`
			First    struct {
				DeviceID string `json:"deviceId"`
			} `json:"first"`
			Second struct {
				DeviceID string `json:"deviceId"`
			} `json:"second"`
		} `json:"conflicts"`
	}
	admin(t, p, "GET", "/admin/v1/shows/"+show+"/gate-conflicts", "", &conflicts)
	if len(conflicts.Conflicts) != 1 || conflicts.Conflicts[0].TicketID != b5 ||
		conflicts.Conflicts[0].First.DeviceID == conflicts.Conflicts[0].Second.DeviceID {
		t.Errorf("gate conflicts %+v, want B5's, between two devices", conflicts)
	}
}

func countURLs(f *browsertest.Fan, part string) int {
	n := 0
	for _, u := range f.URLs() {
		if strings.HasSuffix(u, part) {
			n++
		}
	}
	return n
}

// openGate signs a door in on /gate with the staff token, picks show and downloads its kit.
func openGate(t *testing.T, door *browsertest.Fan, p *platformtest.Platform, staff, show string) {
	t.Helper()
	door.Go(p.BaseURL + "/gate")
	door.WaitFor("the sign-in form", `!document.getElementById("signin").hidden`)
	if got := door.Text(`document.getElementById("staff-token").labels[0].textContent`); got != "Staff token" {
		t.Errorf("the token field's label: %q", got)
	}
	if err := chromedp.Do(door.Ctx, chromedp.SendKeys("#staff-token", staff)); err != nil {
		t.Fatal(err)
	}
	door.JS(`document.querySelector("#signin button[type=submit]").click()`)
	door.WaitFor("the show listed", `[...document.getElementById("show").options].some((o) => o.value === "`+show+`")`)
	door.JS(`document.getElementById("show").value = "` + show + `"; document.getElementById("kit-download").click()`)
	door.WaitFor("the gate kit", `document.getElementById("kit-info").dataset.show === "`+show+`" && !document.getElementById("scan").hidden`)
	// The page fetches the kit again once its service worker has taken over, which keeps that copy.
	door.WaitFor("the kit kept offline", `document.getElementById("kit-info").dataset.kept === "true"`)
}

// offline cuts the door's tab, and its service worker, off the network (or puts them back), as a lost signal
// does: requests fail and navigator.onLine says so.
func offline(t *testing.T, door *browsertest.Fan, off bool) {
	t.Helper()
	conditions(t, door, off)
	if _, err := chromedp.Call(door.Ctx, network.OverrideNetworkState, network.OverrideNetworkStateParams{
		Offline: off, DownloadThroughput: -1, UploadThroughput: -1}); err != nil {
		t.Fatalf("%s: network state: %v", door.Name, err)
	}
}

// conditions cuts the door's requests off the network or lets them through again, without the browser's own
// idea of being online (navigator.onLine, the online and offline events) changing.
func conditions(t *testing.T, door *browsertest.Fan, off bool) {
	t.Helper()
	yes := true
	if _, err := chromedp.Call(door.Ctx, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
		EmulateOfflineServiceWorker: &yes,
		MatchedNetworkConditions:    []*network.Conditions{{Offline: off, DownloadThroughput: -1, UploadThroughput: -1}}}); err != nil {
		t.Fatalf("%s: network conditions: %v", door.Name, err)
	}
}

// holderCode is a code of ticketID made now, as the holder's phone makes it from GET /code.
func holderCode(t *testing.T, p *platformtest.Platform, holder, ticketID string) string {
	t.Helper()
	return holderCodeAt(t, p, holder, ticketID, time.Now())
}

// holderCodeAt is holderCode stamped at.
func holderCodeAt(t *testing.T, p *platformtest.Platform, holder, ticketID string, at time.Time) string {
	t.Helper()
	status, body := send(t, "GET", p.BaseURL+"/api/v1/tickets/"+ticketID+"/code", "", map[string]string{"Authorization": "Bearer " + holder})
	var got struct {
		Code, HolderKey, Certificate string
	}
	if err := json.Unmarshal(body, &got); status != 200 || err != nil {
		t.Fatalf("GET /code: %d %s", status, body)
	}
	parts := strings.Split(got.Code, ".")
	cert, err1 := base64.RawURLEncoding.DecodeString(got.Certificate)
	sig, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	seed, err3 := base64.RawURLEncoding.DecodeString(got.HolderKey)
	if err1 != nil || err2 != nil || err3 != nil || len(seed) != ed25519.SeedSize {
		t.Fatalf("GET /code: %s", body)
	}
	return ticket.MakeCode(cert, sig, ed25519.NewKeyFromSeed(seed), at)
}

func staffCheckIn(t *testing.T, p *platformtest.Platform, staff, code string) int {
	t.Helper()
	status, _ := send(t, "POST", p.BaseURL+"/api/v1/checkin", `{"code":`+jsString(code)+`}`,
		map[string]string{"Authorization": "Bearer " + staff})
	return status
}

// decodeDataQR reads the QR code of an image the page drew itself (a data: URL).
func decodeDataQR(t *testing.T, src string) string {
	t.Helper()
	_, b64, ok := strings.Cut(src, ";base64,")
	raw, err := base64.StdEncoding.DecodeString(b64)
	if !ok || err != nil {
		t.Fatalf("not a data URL: %.80s", src)
	}
	img, err := gif.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("QR image: %v", err)
	}
	return readQR(t, img)
}

// The fake camera's picture: one 640×480 frame of a white field with code's QR code in the middle (none for an
// empty code), as a Y4M video (4:2:0, grey: the chroma planes neutral), which Chromium plays in a loop. It is
// written in place, so a camera opened afterwards shows the new picture.
const camW, camH = 640, 480

func writeCamera(t *testing.T, path, code string) {
	t.Helper()
	luma := bytes.Repeat([]byte{0xff}, camW*camH)
	if code != "" {
		q, err := qr.Image(code, 420)
		if err != nil {
			t.Fatal(err)
		}
		b := q.Bounds()
		ox, oy := (camW-b.Dx())/2, (camH-b.Dy())/2
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				luma[(oy+y-b.Min.Y)*camW+ox+x-b.Min.X] = q.GrayAt(x, y).Y
			}
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	w.WriteString("YUV4MPEG2 W640 H480 F10:1 Ip A1:1 C420jpeg\nFRAME\n")
	w.Write(luma)
	w.Write(bytes.Repeat([]byte{0x80}, camW*camH/2))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
