package http_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/waitroom"
)

// TestPartitionsSetting: an operator splits a show's queue over partitions before the sale; a count out of range,
// a change while fans wait, and partitions with threshold mode are each a 422 problem naming partitions; GET
// answers the count and the fans waiting in each partition, whose sum is the queue's.
func TestPartitionsSetting(t *testing.T) {
	t.Parallel()
	s := newServer(t, waitroom.Options{}, nil)
	show := s.show(t, 5, 100)
	admin := "Bearer " + adminToken
	queue := "/admin/v1/shows/" + show + "/queue"
	type view struct {
		Partitions     int     `json:"partitions"`
		PartitionSizes []int64 `json:"partitionSizes"`
		Waiting        int64   `json:"waiting"`
	}
	get := func() view {
		res, b := s.do(t, "GET", queue, admin, "")
		var v view
		if res.StatusCode != 200 || json.Unmarshal(b, &v) != nil {
			t.Fatalf("GET %d %s", res.StatusCode, b)
		}
		return v
	}
	if v := get(); v.Partitions != 1 || len(v.PartitionSizes) != 1 {
		t.Fatalf("a show never split: %+v, want one partition", v)
	}
	refused := func(body, why string) {
		t.Helper()
		res, b := s.do(t, "PUT", queue, admin, body)
		var p problem.Problem
		if res.StatusCode != 422 || json.Unmarshal(b, &p) != nil || !strings.Contains(p.Detail, "partitions") {
			t.Fatalf("%s: got %d %s, want a 422 problem naming partitions", why, res.StatusCode, b)
		}
	}
	refused(`{"partitions":0}`, "zero")
	refused(`{"partitions":65}`, "over 64")
	refused(`{"partitions":3,"mode":"threshold"}`, "with threshold mode")
	if res, b := s.do(t, "PUT", queue, admin, `{"partitions":3,"paused":true}`); res.StatusCode != 200 || !strings.Contains(string(b), `"partitions":3`) {
		t.Fatalf("PUT partitions 3 before the sale: %d %s", res.StatusCode, b)
	}
	for _, u := range []string{"ana", "bo", "cy", "di", "ed", "flo"} {
		if st, res := s.join(t, show, u); res.StatusCode != 200 || st.Status != "waiting" {
			t.Fatalf("join %s: %d %+v", u, res.StatusCode, st)
		}
	}
	v := get()
	var sum int64
	for _, n := range v.PartitionSizes {
		sum += n
	}
	if v.Partitions != 3 || len(v.PartitionSizes) != 3 || sum != 6 || v.Waiting != 6 {
		t.Fatalf("after six joins: %+v, want 3 partitions holding 6", v)
	}
	refused(`{"partitions":12}`, "a change while fans wait")
	if v := get(); v.Partitions != 3 {
		t.Fatalf("a refused change changed the count: %+v", v)
	}
}
