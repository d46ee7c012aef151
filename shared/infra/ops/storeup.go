package ops

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashseat/flashseat/shared/store"
)

// storeUp pings the process's stores at scrape time and exports name{store} (booking_store_up, edge_store_up): 1
// when the store answered within a second, else 0. Alerts on an unreachable Redis or PostgreSQL read it.
type storeUp struct {
	desc   *prometheus.Desc
	checks []store.Check
}

// StoreUp returns the collector of the gauge name for checks. The name is whole (not a prefix) so that the
// deploy/ test finds every exported metric name written out in the code.
func StoreUp(name string, checks []store.Check) prometheus.Collector {
	return storeUp{desc: prometheus.NewDesc(name,
		"1 when the store answered a ping at scrape time, 0 when it did not.", []string{"store"}, nil), checks: checks}
}

func (s storeUp) Describe(ch chan<- *prometheus.Desc) { ch <- s.desc }

func (s storeUp) Collect(ch chan<- prometheus.Metric) {
	for _, c := range s.checks {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		v := 1.0
		if err := c.Ping(ctx); err != nil {
			v = 0
		}
		cancel()
		ch <- prometheus.MustNewConstMetric(s.desc, prometheus.GaugeValue, v, c.Name)
	}
}
