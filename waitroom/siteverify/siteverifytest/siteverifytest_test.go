package siteverifytest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/loadtest/browsertest"
	"github.com/flashseat/flashseat/waitroom/siteverify"
	"github.com/flashseat/flashseat/waitroom/siteverify/siteverifytest"
)

// Turnstile also takes its siteverify request as JSON; the server does too.
func TestVerifyJSONBody(t *testing.T) {
	t.Parallel()
	srv := siteverifytest.New(t)
	tok := srv.Token()
	post := func() map[string]any {
		body := fmt.Sprintf(`{"secret":%q,"response":%q,"remoteip":"198.51.100.4","idempotency_key":"k-1"}`,
			siteverifytest.Secret, tok)
		resp, err := http.Post(srv.VerifyURL(), "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := post(); got["success"] != true || got["hostname"] != siteverifytest.Hostname {
		t.Errorf("first: got %v, want success on %s", got, siteverifytest.Hostname)
	}
	if got := post(); got["success"] != false || fmt.Sprint(got["error-codes"]) != "[timeout-or-duplicate]" {
		t.Errorf("second: got %v, want timeout-or-duplicate", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0].RemoteIP != "198.51.100.4" || reqs[0].IdempotencyKey != "k-1" {
		t.Errorf("requests: got %+v, want two with remoteip and idempotency_key", reqs)
	}
}

func TestWidgetToken(t *testing.T) {
	t.Parallel()
	srv := siteverifytest.New(t)
	tests := []struct {
		name, siteKey, origin string
		wantError             string // the answer's error; a token when none
	}{
		{"the server's site key", siteverifytest.SiteKey, "https://tickets.example:8443", ""},
		{"another site key", "someone-elses", "https://tickets.example", "invalid-sitekey"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(srv.ScriptURL(), "/api.js")+
				"/token?sitekey="+tt.siteKey, nil)
			req.Header.Set("Origin", tt.origin)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct{ Token, Error string }
			_ = json.NewDecoder(resp.Body).Decode(&body)
			if resp.StatusCode != http.StatusOK || body.Error != tt.wantError || (body.Token == "") != (tt.wantError != "") {
				t.Fatalf("got %d %+v, want 200 with error %q or a token", resp.StatusCode, body, tt.wantError)
			}
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != tt.origin {
				t.Errorf("Access-Control-Allow-Origin: got %q, want %q", got, tt.origin)
			}
			if tt.wantError != "" {
				return
			}
			// The widget's token says it was solved on the page's hostname.
			v, err := siteverify.New(withHostname(srv.Config(), "tickets.example"))
			if err != nil {
				t.Fatal(err)
			}
			if err := v.Verify(context.Background(), body.Token, ""); err != nil {
				t.Errorf("Verify: got %v, want nil", err)
			}
		})
	}
}

func withHostname(c siteverify.Config, host string) siteverify.Config {
	c.Hostname = host
	return c
}

// The widget script renders a real button into each provider's element; pressing it leaves a token the server
// accepts once in the provider's hidden field and hands it to data-callback. A wrong site key reaches
// data-error-callback. Explicit rendering, onload and reset work as the providers' do.
func TestWidgetInBrowser(t *testing.T) {
	t.Parallel()
	srv := siteverifytest.New(t)
	pages := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		script := srv.ScriptURL()
		body := `<div id="turnstile" class="cf-turnstile" data-sitekey="` + siteverifytest.SiteKey +
			`" data-callback="onTurnstile"></div>
<div id="hcaptcha" class="h-captcha" data-sitekey="` + siteverifytest.SiteKey + `" data-callback="onHCaptcha"></div>
<div id="recaptcha" class="g-recaptcha" data-sitekey="` + siteverifytest.SiteKey + `" data-callback="onReCAPTCHA"></div>
<div id="bad" class="cf-turnstile" data-sitekey="not-this-sites" data-error-callback="onBadKey"></div>`
		if r.URL.Path == "/explicit" {
			script += "?render=explicit&onload=ready"
			body = `<div id="later"></div>`
		}
		fmt.Fprintf(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>widget</title>
<link rel="icon" href="data:,">
<script>
window.got = {};
function onTurnstile(t) { got.turnstile = t; }
function onHCaptcha(t) { got.hcaptcha = t; }
function onReCAPTCHA(t) { got.recaptcha = t; }
function onBadKey(e) { got.badKey = e; }
function ready() { got.id = turnstile.render("#later", {sitekey: %q, callback: (t) => { got.later = t; }}); }
</script>
<script src="%s" async defer></script></head>
<body><form>%s</form></body></html>`, siteverifytest.SiteKey, script, body)
	}))
	t.Cleanup(pages.Close)
	v, err := siteverify.New(withHostname(srv.Config(), "127.0.0.1")) // the page's hostname
	if err != nil {
		t.Fatal(err)
	}
	fan := browsertest.New(t).Fan("fan", time.Minute)
	fan.Go(pages.URL + "/")
	fan.WaitFor("four widgets", `document.querySelectorAll("form button").length === 4`)
	if got := fan.Text(`[...document.querySelectorAll("form button")].map((b) => b.type + ":" + b.textContent).join()`); got != strings.TrimSuffix(strings.Repeat("button:I am human,", 4), ",") {
		t.Errorf("buttons: got %q, want four <button type=button> labelled I am human", got)
	}
	for _, w := range []struct{ id, field string }{
		{"turnstile", "cf-turnstile-response"}, {"hcaptcha", "h-captcha-response"}, {"recaptcha", "g-recaptcha-response"},
	} {
		fan.JS(`document.querySelector("#` + w.id + ` button").click()`)
		fan.WaitFor(w.id+"'s callback", `typeof got.`+w.id+` === "string"`)
		tok := fan.Text(`got.` + w.id)
		if got := fan.Text(`document.querySelector('#` + w.id + ` input[type=hidden][name="` + w.field + `"]').value`); got != tok {
			t.Errorf("%s: hidden %s: got %q, want the callback's token %q", w.id, w.field, got, tok)
		}
		if got := fan.Text(`document.querySelector("#` + w.id + ` [role=status]").textContent`); got != "Verified" {
			t.Errorf("%s: status: got %q, want Verified", w.id, got)
		}
		if err := v.Verify(context.Background(), tok, "127.0.0.1"); err != nil {
			t.Errorf("%s: Verify: got %v, want nil", w.id, err)
		}
		if err := v.Verify(context.Background(), tok, "127.0.0.1"); !errors.Is(err, siteverify.ErrRejected) {
			t.Errorf("%s: Verify again: got %v, want ErrRejected", w.id, err)
		}
	}

	fan.JS(`document.querySelector("#bad button").click()`)
	fan.WaitFor("the wrong site key's error callback", `typeof got.badKey === "string"`)
	if got := fan.Text(`document.querySelector('#bad input[name="cf-turnstile-response"]').value`); got != "" {
		t.Errorf("wrong site key: got token %q, want none", got)
	}

	fan.Go(pages.URL + "/explicit")
	fan.WaitFor("explicit render on load", `typeof got.id === "string" && !!document.querySelector("#later button")`)
	fan.JS(`document.querySelector("#later button").click()`)
	fan.WaitFor("the render callback", `typeof got.later === "string"`)
	if got := fan.Text(`turnstile.getResponse(got.id)`); got != fan.Text(`got.later`) {
		t.Errorf("getResponse: got %q, want the callback's token", got)
	}
	fan.JS(`turnstile.reset(got.id)`)
	if got := fan.Text(`turnstile.getResponse(got.id) + "|" + document.querySelector("#later button").disabled`); got != "|false" {
		t.Errorf("after reset: got %q, want no token and the button enabled", got)
	}
}
