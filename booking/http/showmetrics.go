package http

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashseat/flashseat/booking"
)

// showSeats are the per-show seat gauges, read at scrape time from the console's overview. Only shows whose sale
// is open (opened, not closed, show not started) are exported, so the number of series stays bounded by the
// sales running now rather than growing with the catalog.
var (
	showAvailable = prometheus.NewDesc("booking_show_seats_available", "Seats neither held nor sold, per show with an open sale.", []string{"show"}, nil)
	showHeld      = prometheus.NewDesc("booking_show_seats_held", "Seats under a live hold, per show with an open sale.", []string{"show"}, nil)
	showSold      = prometheus.NewDesc("booking_show_seats_sold", "Seats sold, per show with an open sale.", []string{"show"}, nil)
)

type showCollector struct {
	svc *booking.Service
	now func() time.Time
}

// NewShowCollector exports booking_show_seats_{available,held,sold} for every show with an open sale.
func NewShowCollector(svc *booking.Service) prometheus.Collector {
	return showCollector{svc: svc, now: time.Now}
}

func (c showCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- showAvailable
	ch <- showHeld
	ch <- showSold
}

func (c showCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	shows, err := c.svc.Overview(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(showAvailable, err)
		return
	}
	now := c.now()
	for _, o := range shows {
		if !o.Show.OnSale(now) {
			continue
		}
		ch <- prometheus.MustNewConstMetric(showAvailable, prometheus.GaugeValue, float64(o.Available), o.Show.ID)
		ch <- prometheus.MustNewConstMetric(showHeld, prometheus.GaugeValue, float64(o.Held), o.Show.ID)
		ch <- prometheus.MustNewConstMetric(showSold, prometheus.GaugeValue, float64(o.Booked), o.Show.ID)
	}
}
