package client

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
)

// BenchmarkSeatMapDecode: what reading a 5,000-seat map (the stadium's hall) costs a fan, with the JSON v2
// decoder the client uses for it and with encoding/json, in the same run; v1/v2 is how many times as fast.
func BenchmarkSeatMapDecode(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"showId":"sh_0123456789abcdef0123456789abcdef","seats":[`)
	for i := range 5000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"seatId":"%s%d","row":"%s","number":%d,"category":"GOLD","price":12000,"status":"AVAILABLE"}`,
			string(rune('A'+i/50%26)), i%50+1, string(rune('A'+i/50%26)), i%50+1)
	}
	sb.WriteString(`]}`)
	body := []byte(sb.String())
	decode := func(unmarshal func([]byte, any) error) time.Duration {
		const n = 20
		began := time.Now()
		for range n {
			var m SeatMap
			if err := unmarshal(body, &m); err != nil || len(m.Seats) != 5000 {
				b.Fatalf("decoded %d seats: %v", len(m.Seats), err)
			}
		}
		return time.Since(began) / n
	}
	v2 := func(data []byte, v any) error { return jsonv2.Unmarshal(data, v) }
	var t1, t2 time.Duration
	for b.Loop() {
		t1 += decode(json.Unmarshal)
		t2 += decode(v2)
	}
	b.ReportMetric(float64(len(body))/1e3, "map-KB")
	b.ReportMetric(float64(t1.Microseconds())/float64(b.N), "v1-µs/map")
	b.ReportMetric(float64(t2.Microseconds())/float64(b.N), "v2-µs/map")
	b.ReportMetric(float64(t1)/float64(t2), "v1/v2")
}
