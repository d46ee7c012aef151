package salereport_test

import (
	"bytes"
	"encoding/csv"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/salereport"
)

func TestWaitsOf(t *testing.T) {
	var waits []float64
	for i := 100; i >= 1; i-- { // out of order: WaitsOf sorts
		waits = append(waits, float64(i))
	}
	w := salereport.WaitsOf(waits)
	if w.P50 != 50 || w.P90 != 90 || w.P99 != 99 || w.Max != 100 || w.Count != 100 {
		t.Errorf("percentiles of 1..100: %+v", w)
	}
	var n int64
	for _, b := range w.Histogram {
		n += b.Count
	}
	if n != 100 || len(w.Histogram) > 12 || w.Histogram[len(w.Histogram)-1].To < 100 {
		t.Errorf("histogram %+v", w.Histogram)
	}
	if one := salereport.WaitsOf([]float64{0}); one.Max != 0 || one.Count != 1 || one.Histogram[0].Count != 1 {
		t.Errorf("one wait of zero: %+v", one)
	}
	if none := salereport.WaitsOf(nil); none.Count != 0 || none.Histogram == nil {
		t.Errorf("no waits: %+v", none)
	}
}

func TestSeries(t *testing.T) {
	m := func(i int) time.Time { return time.Date(2026, 12, 2, 5, 40+i, 0, 0, time.UTC) }
	joined := map[time.Time]int64{m(0): 5, m(2): 1}
	left := map[time.Time]int64{m(1): 3, m(3): 2}
	q := salereport.Cumulative(m(0), m(3), joined, left)
	want := []int64{5, 2, 3, 1}
	for i, p := range q {
		if !p.T.Equal(m(i)) || p.Count != want[i] {
			t.Errorf("minute %d: %+v, want %d", i, p, want[i])
		}
	}
	if a := salereport.Minutes(m(0), m(3), joined); len(a) != 4 || a[1].Count != 0 || a[2].Count != 1 {
		t.Errorf("minutes: %+v", a)
	}
	// A window that starts after some joined: they stand in line from its first minute.
	if q := salereport.Cumulative(m(1), m(1), joined, left); q[0].Count != 2 {
		t.Errorf("from the second minute: %+v", q)
	}
}

func TestWriteCSV(t *testing.T) {
	r := salereport.Report{ShowID: "s1", Title: `A "quoted", title`, Refusals: map[string]int64{"proof-required": 2},
		Arrivals: []salereport.Point{{T: time.Date(2026, 12, 2, 5, 40, 0, 0, time.UTC), Count: 3}},
		Revenue:  salereport.Revenue{Currency: "INR", ByCategory: map[string]int64{"GOLD": 45000}}}
	var b bytes.Buffer
	if err := salereport.WriteCSV(&b, r); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, row := range rows {
		got[row[0]+"/"+row[1]] = row[2]
	}
	for k, v := range map[string]string{"figure/key": "value", "show/title": r.Title, "arrivals/2026-12-02T05:40:00Z": "3",
		"refusals/proof-required": "2", "revenue/GOLD": "45000", "revenue/currency": "INR"} {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
}
