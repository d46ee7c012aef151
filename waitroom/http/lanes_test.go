package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/audit"
	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
	"github.com/flashseat/flashseat/waitroom/internal/wrtest"
)

// laneView is GET .../queue's lanes: the settings' and each lane's figures.
type laneView struct {
	Lanes []struct {
		Name     string  `json:"name"`
		Share    float64 `json:"share"`
		Waiting  int64   `json:"waiting"`
		Active   int64   `json:"active"`
		Admitted int64   `json:"admitted"`
	} `json:"lanes"`
	Partitions     int     `json:"partitions"`
	PartitionSizes []int64 `json:"partitionSizes"`
}

const clubLanes = `{"lanes":[{"name":"fanclub","share":0.7},{"name":"general","share":0.3}]}`

// TestLanesSetting: lanes are queue settings; bad ones are each a 422 problem naming the field; a change of
// names while fans wait is refused (422 naming lanes) and a change of shares is taken; GET answers the lanes with
// their figures, and every change is audited with the lanes in it.
func TestLanesSetting(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{}, nil)
	show := s.show(t, 0.01, 100)
	admin := "Bearer " + adminToken
	queue := "/admin/v1/shows/" + show + "/queue"
	put := func(body string) (int, []byte) {
		res, b := s.do(t, "PUT", queue, admin, body, audit.OperatorHeader, "Ravi")
		return res.StatusCode, b
	}
	for _, c := range []struct{ name, body, field string }{
		{"names not unique", `{"lanes":[{"name":"general","share":0.5},{"name":"general","share":0.5}]}`, "lanes[1].name"},
		{"shares not summing to 1", `{"lanes":[{"name":"fanclub","share":0.6},{"name":"general","share":0.3}]}`, "lanes' shares"},
		{"a share of 0", `{"lanes":[{"name":"fanclub","share":0},{"name":"general","share":1}]}`, "lanes[0].share"},
		{"no general lane", `{"lanes":[{"name":"fanclub","share":0.5},{"name":"cardholders","share":0.5}]}`, "general"},
		{"a bad name", `{"lanes":[{"name":"Fan Club","share":0.5},{"name":"general","share":0.5}]}`, "lanes[0].name"},
		{"an unknown member", `{"lanes":[{"name":"general","share":1,"weight":2}]}`, "lanes[0].weight"},
		{"not a list", `{"lanes":{"name":"general"}}`, "lanes"},
		{"nine lanes", `{"lanes":[` + strings.Repeat(`{"name":"a","share":0.1},`, 8) + `{"name":"general","share":0.2}]}`, "lanes"},
		{"too many lines", `{"partitions":40,` + clubLanes[1:], "lanes"},
		{"threshold mode", `{"mode":"threshold",` + clubLanes[1:], "lanes"},
	} {
		st, b := put(c.body)
		var p problem.Problem
		if st != 422 || json.Unmarshal(b, &p) != nil || p.Type != problem.TypeBase+problem.Validation ||
			!strings.Contains(p.Detail, c.field) {
			t.Errorf("%s: %d %s, want 422 naming %s", c.name, st, b, c.field)
		}
	}
	if st, b := put(`{"partitions":3,` + clubLanes[1:]); st != 200 || !strings.Contains(string(b), `"lanes":[{"name":"fanclub","share":0.7}`) {
		t.Fatalf("lanes before the sale: %d %s", st, b)
	}
	for _, u := range []string{"ana", "bo", "cy"} {
		if st, res := s.join(t, show, u); res.StatusCode != 200 || st.Status != "waiting" {
			t.Fatalf("join %s: %d %+v", u, res.StatusCode, st)
		}
	}
	if st, b := put(`{"lanes":[{"name":"presale","share":0.7},{"name":"general","share":0.3}]}`); st != 422 ||
		!strings.Contains(string(b), "lanes cannot") {
		t.Errorf("a rename while fans wait: %d %s, want 422 naming lanes", st, b)
	}
	if st, b := put(`{"lanes":[{"name":"fanclub","share":0.5},{"name":"general","share":0.5}]}`); st != 200 {
		t.Errorf("new shares while fans wait: %d %s", st, b)
	}
	res, b := s.do(t, "GET", queue, admin, "")
	var v laneView
	if res.StatusCode != 200 || json.Unmarshal(b, &v) != nil {
		t.Fatalf("GET %d %s", res.StatusCode, b)
	}
	if len(v.Lanes) != 2 || v.Lanes[0].Share != 0.5 || v.Lanes[1].Name != "general" || v.Lanes[1].Waiting != 3 ||
		v.Partitions != 3 || len(v.PartitionSizes) != 6 {
		t.Fatalf("GET after the changes: %s, want both lanes, the general lane's 3 fans, 6 lines", b)
	}
	entries, err := audit.New(wrtest.Database(t)).List(context.Background(), audit.Filter{ShowID: show})
	if err != nil {
		t.Fatal(err)
	}
	var changes []string // newest first
	for _, e := range entries {
		var old, now admission.Settings
		if e.Action == "queue.settings" && json.Unmarshal(e.Old, &old) == nil && json.Unmarshal(e.New, &now) == nil &&
			old.Lanes != now.Lanes {
			changes = append(changes, old.Lanes.String()+" -> "+now.Lanes.String()+" by "+e.Actor)
		}
	}
	want := []string{"fanclub:0.7,general:0.3 -> fanclub:0.5,general:0.5 by Ravi", " -> fanclub:0.7,general:0.3 by Ravi"}
	if fmt.Sprint(changes) != fmt.Sprint(want) {
		t.Fatalf("audited lane changes %q, want %q", changes, want)
	}
}

// TestLanesBypassCode: a bypass code names its lane (one of the show's, else 422 naming lane); the fan it admits
// is admitted on that lane's lines, counts in its figures, and is found admitted there again; an invited fan
// joins their invitation's lane.
func TestLanesBypassCode(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{Tick: 50 * time.Millisecond}, nil)
	show := s.show(t, 0.01, 100)
	admin := "Bearer " + adminToken
	queue := "/admin/v1/shows/" + show + "/queue"
	if res, b := s.do(t, "PUT", queue, admin, clubLanes); res.StatusCode != 200 {
		t.Fatalf("lanes: %d %s", res.StatusCode, b)
	}
	issue := func(lane string) (int, []byte) {
		body := fmt.Sprintf(`{"count":1,"uses":1,"expiresAt":%q,"lane":%q}`,
			time.Now().Add(time.Hour).UTC().Format(time.RFC3339), lane)
		res, b := s.do(t, "POST", "/admin/v1/shows/"+show+"/bypass-codes", admin, body)
		return res.StatusCode, b
	}
	if st, b := issue("vip"); st != 422 || !strings.Contains(string(b), "lane") {
		t.Fatalf("a code naming no lane of the show: %d %s, want 422 naming lane", st, b)
	}
	st, b := issue("fanclub")
	var out struct {
		Codes []struct {
			Code string `json:"code"`
			Lane string `json:"lane"`
		} `json:"codes"`
	}
	if st != 201 || json.Unmarshal(b, &out) != nil || len(out.Codes) != 1 || out.Codes[0].Lane != "fanclub" {
		t.Fatalf("issue: %d %s", st, b)
	}
	if err := s.rdb.HSet(context.Background(), rediskey.Invitation(show, "ivy"), "ivy", "fanclub").Err(); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"gus", "hal", "ivy"} {
		if st, res := s.join(t, show, u); res.StatusCode != 200 || st.Status != "waiting" {
			t.Fatalf("join %s: %d %+v", u, res.StatusCode, st)
		}
	}
	if st, b := s.redeem(t, show, "zoe", out.Codes[0].Code); st != 200 || !strings.Contains(string(b), `"admitted"`) {
		t.Fatalf("the code: %d %s", st, b)
	}
	if st, _ := s.join(t, show, "zoe"); st.Status != "admitted" {
		t.Fatalf("zoe looked up again: %+v, want admitted (found on the fan club's lines)", st)
	}
	// The code's one use is spent: presenting it moves nobody into the fan club.
	st, b = s.redeem(t, show, "yan", out.Codes[0].Code)
	wantProblem(t, st, b, 409, problem.BypassCodeUsedUp)
	if st, res := s.join(t, show, "yan"); res.StatusCode != 200 || st.Status != "waiting" {
		t.Fatalf("yan: %d %+v", res.StatusCode, st)
	}
	res, b := s.do(t, "GET", queue, admin, "")
	var v laneView
	if res.StatusCode != 200 || json.Unmarshal(b, &v) != nil || len(v.Lanes) != 2 {
		t.Fatalf("GET %d %s", res.StatusCode, b)
	}
	if club, general := v.Lanes[0], v.Lanes[1]; club.Admitted != 1 || club.Active != 1 || club.Waiting != 1 ||
		general.Waiting != 3 || general.Admitted != 0 {
		t.Fatalf("lanes %+v, want the code's fan admitted in the fan club, ivy waiting there, 3 general fans", v.Lanes)
	}
}
