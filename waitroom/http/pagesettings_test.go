package http_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/shared/token"
	"github.com/flashseat/flashseat/waitroom"
	wrredis "github.com/flashseat/flashseat/waitroom/redis"
)

// TestPageSettings: the queue page's message and language are queue settings: set in part (what is left out
// stays), answered by GET, audited, and refused with a 422 problem when no fan should see them.
func TestPageSettings(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{}, nil)
	show := s.show(t, 5, 100)
	put := func(body string) (int, admission.Settings, []byte) {
		res, b := s.do(t, "PUT", "/admin/v1/shows/"+show+"/queue", "Bearer "+adminToken, body)
		var st admission.Settings
		_ = json.Unmarshal(b, &st)
		return res.StatusCode, st, b
	}
	if status, st, b := put(`{}`); status != 200 || st.Page != admission.DefaultPage() {
		t.Fatalf("default page: %d %s", status, b)
	}
	if status, st, b := put(`{"page":{"message":"Doors open at 7.\nBring ID.","language":"hi"}}`); status != 200 ||
		st.Page.Message != "Doors open at 7.\nBring ID." || st.Page.Language != "hi" {
		t.Fatalf("set page: %d %s", status, b)
	}
	if status, st, b := put(`{"page":{"language":"en"}}`); status != 200 || st.Page.Message != "Doors open at 7.\nBring ID." || st.Page.Language != "en" {
		t.Fatalf("language alone keeps the message: %d %s", status, b)
	}
	res, b := s.do(t, "GET", "/admin/v1/shows/"+show+"/queue", "Bearer "+adminToken, "")
	if res.StatusCode != 200 || !strings.Contains(string(b), `"page":{"message":"Doors open at 7.\nBring ID.","language":"en"}`) {
		t.Fatalf("get: %d %s", res.StatusCode, b)
	}
	for name, body := range map[string]string{
		"unknown language": `{"page":{"language":"fr"}}`,
		"too long":         `{"page":{"message":"` + strings.Repeat("x", admission.MaxPageMessage+1) + `"}}`,
		"control":          `{"page":{"message":"a\u0007b"}}`,
		"not an object":    `{"page":"hello"}`,
	} {
		status, _, b := put(body)
		if status != 422 || !strings.Contains(string(b), problem.TypeBase+problem.Validation) {
			t.Errorf("%s: %d %s", name, status, b)
		}
	}
	if _, st, _ := put(`{}`); st.Page.Language != "en" {
		t.Fatalf("a refused change changed the page: %+v", st.Page)
	}
}

// TestQueuePageMessageAndLanguage: the operator's message and language, set on one edge replica, are on the page
// another replica serves within a second, and still after Redis lost the show. The page speaks the browser's
// language when it is one of the page's, else the show's; the message is text, never markup.
func TestQueuePageMessageAndLanguage(t *testing.T) {
	t.Parallel()
	k, err := token.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	is := token.NewIssuer(k)
	a := newReplica(t, waitroom.Options{}, is, nil)
	b := newReplica(t, waitroom.Options{}, is, nil)
	show := a.show(t, 1, 10)
	page := func(s *server, accept string) string {
		res, body := s.do(t, "GET", "/queue/"+show, "", "", "Accept-Language", accept)
		if res.StatusCode != 200 || !strings.Contains(res.Header.Get("Vary"), "Accept-Language") {
			t.Fatalf("page: %d %v", res.StatusCode, res.Header)
		}
		return string(body)
	}
	if p := page(b, "hi-IN,hi;q=0.9"); !strings.Contains(p, `<html lang="hi"`) || !strings.Contains(p, "आपको कतार में जगह दिला रहे हैं…") {
		t.Fatalf("a Hindi browser gets no Hindi page:\n%s", p)
	}
	if p := page(b, "fr"); !strings.Contains(p, `<html lang="en" data-texts="{}"`) || strings.Contains(p, `id="message"`) {
		t.Fatalf("before any setting, a French browser gets the English page without a message:\n%s", p)
	}

	msg := "Gates open at 6 pm.\nBring a photo ID. <script>alert(1)</script>"
	body, _ := json.Marshal(map[string]any{"page": map[string]string{"message": msg, "language": "hi"}})
	set := time.Now()
	if res, b := a.do(t, "PUT", "/admin/v1/shows/"+show+"/queue", "Bearer "+adminToken, string(body)); res.StatusCode != 200 {
		t.Fatalf("put: %d %s", res.StatusCode, b)
	}
	var p string
	for p = page(b, "fr"); !strings.Contains(p, "Gates open at 6 pm."); p = page(b, "fr") {
		if time.Since(set) > time.Second {
			t.Fatalf("the other replica's page lacks the message a second after it was set:\n%s", p)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(p, `<html lang="hi"`) || !strings.Contains(p, "आयोजक की ओर से") ||
		!strings.Contains(p, "&lt;script&gt;alert(1)&lt;/script&gt;") || strings.Contains(p, "<script>alert") {
		t.Fatalf("a French browser on a Hindi show, with the message as text:\n%s", p)
	}
	if p := page(b, "en-GB,en;q=0.8"); !strings.Contains(p, `<html lang="en"`) || !strings.Contains(p, "From the organiser") ||
		!strings.Contains(p, `<p lang="hi">Gates open at 6 pm.`) {
		t.Fatalf("an English browser gets the English page with the message:\n%s", p)
	}

	// Redis forgets the show: the page's settings come back from the record.
	if err := a.rdb.Del(context.Background(), wrredis.Keys(show)...).Err(); err != nil {
		t.Fatal(err)
	}
	if p := page(b, "fr"); !strings.Contains(p, "Gates open at 6 pm.") || !strings.Contains(p, `<html lang="hi"`) {
		t.Fatalf("after Redis lost the show:\n%s", p)
	}
}
