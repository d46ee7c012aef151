package waitroom_test

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/flashseat/flashseat/waitroom"
)

// TestBotsDocReasons: docs/BOTS.md's table of refusals has a row per reason of waitroom.Reasons, in its order,
// with the row's status and problem type.
func TestBotsDocReasons(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/BOTS.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| (\\d{3}) \\| `([a-z-]+)` \\| `([a-z-]+)` \\|").FindAllSubmatch(doc, -1)
	if len(rows) != len(waitroom.Reasons) {
		t.Fatalf("docs/BOTS.md lists %d refusals, the table %d", len(rows), len(waitroom.Reasons))
	}
	for i, r := range waitroom.Reasons {
		got := string(rows[i][1]) + " " + string(rows[i][2]) + " " + string(rows[i][3])
		if want := strconv.Itoa(r.Status) + " " + r.Problem + " " + r.Name; got != want {
			t.Errorf("docs/BOTS.md's refusal %d: %q, the table's %q", i+1, got, want)
		}
	}
}

// TestStoreReasons: the reasons join.lua finds itself have the rows its code gives them (a prefix over its places
// is a suspect; a browser holding another identity's place is neither a suspect nor a failed proof; a spent
// proof is both), and every reason has its error and problem.
func TestStoreReasons(t *testing.T) {
	t.Parallel()
	want := map[string][2]bool{ // suspect, failed
		waitroom.ReasonPrefixLimited:  {true, false},
		waitroom.ReasonBrowserInQueue: {false, false},
		waitroom.ReasonProofReplayed:  {true, true},
	}
	if len(waitroom.StoreReasons) != len(want) {
		t.Fatalf("StoreReasons %v, join.lua finds %d", waitroom.StoreReasons, len(want))
	}
	for _, name := range waitroom.StoreReasons {
		r, ok := waitroom.ReasonOf(name)
		if !ok || [2]bool{r.Suspect, r.Failed} != want[name] {
			t.Errorf("%s: %+v, join.lua makes it suspect, failed = %v", name, r, want[name])
		}
	}
	seen := map[string]bool{}
	for _, r := range waitroom.Reasons {
		if seen[r.Name] {
			t.Errorf("%s appears twice", r.Name)
		}
		seen[r.Name] = true
		if r.Err == nil || r.Status < 400 || r.Problem == "" || r.Detail == "" || r.Means == "" {
			t.Errorf("%s lacks a part: %+v", r.Name, r)
		}
	}
}
