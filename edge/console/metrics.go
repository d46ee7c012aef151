package console

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The waiting room's per-show gauges, exported only for shows whose sale is open (so the series stay bounded by
// the sales running now): from the latest round of figures. A scrape marks the figures wanted, so an edge that
// is scraped keeps gathering them once a second even with no console open.
var (
	showWaiting  = prometheus.NewDesc("waitroom_show_waiting", "Fans waiting in the show's queue, per show with an open sale.", []string{"show"}, nil)
	showActive   = prometheus.NewDesc("waitroom_show_active", "Admitted fans holding an active slot, per show with an open sale.", []string{"show"}, nil)
	showPaused   = prometheus.NewDesc("waitroom_show_paused", "1 while an operator has paused admission, per show with an open sale.", []string{"show"}, nil)
	showAdmitted = prometheus.NewDesc("waitroom_show_admitted_total", "Fans admitted since the queue started, per show with an open sale.", []string{"show"}, nil)
)

type showCollector struct {
	figures *Figures
	now     func() time.Time
}

// NewShowCollector exports waitroom_show_waiting, waitroom_show_active, waitroom_show_admitted_total and
// waitroom_show_paused.
func NewShowCollector(f *Figures) prometheus.Collector {
	return showCollector{figures: f, now: time.Now}
}

func (c showCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- showWaiting
	ch <- showActive
	ch <- showAdmitted
	ch <- showPaused
}

func (c showCollector) Collect(ch chan<- prometheus.Metric) {
	snap, ok := c.figures.Want()
	if !ok {
		return
	}
	now := c.now()
	for _, sh := range snap.Shows {
		if !sh.OnSale(now) {
			continue
		}
		ch <- prometheus.MustNewConstMetric(showWaiting, prometheus.GaugeValue, float64(sh.Queue.Waiting), sh.ShowID)
		ch <- prometheus.MustNewConstMetric(showActive, prometheus.GaugeValue, float64(sh.Queue.Active), sh.ShowID)
		ch <- prometheus.MustNewConstMetric(showAdmitted, prometheus.CounterValue, float64(sh.Queue.AdmittedTotal), sh.ShowID)
		paused := 0.0
		if sh.Queue.Paused {
			paused = 1
		}
		ch <- prometheus.MustNewConstMetric(showPaused, prometheus.GaugeValue, paused, sh.ShowID)
	}
}
