package console

import (
	"bytes"
	"errors"
	"html/template"
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"

	edgehttp "github.com/flashseat/flashseat/edge/http"
	"github.com/flashseat/flashseat/shared/pagekit"
	"github.com/flashseat/flashseat/shared/problem"
	"github.com/flashseat/flashseat/shared/salereport"
	"github.com/flashseat/flashseat/waitroom"
)

// The Report view: /admin/shows/{showId}/report, a page of its own for one show's after-sale report (booking's
// GET /admin/v1/shows/{id}/report), rendered here with its charts as SVG (chart.go) so that it prints to a clean
// page as it is and needs no script. Its CSV link is booking's report.csv, reached with the console session like
// every /admin/v1 call.

var reportTmpl = template.Must(template.New("report.html").Funcs(template.FuncMap{"asset": assets.URL}).
	ParseFS(pageFS, "page/report.html"))

// reportPage is what report.html is given.
type reportPage struct {
	R                      salereport.Report
	Series, Queue          chart
	Waits, Funnel          chart
	Refusals               []reportRow
	Outcomes, Revenue      []reportRow
	Gross, Refunded, Net   string
	WaitP50, WaitP90       string
	WaitP99, WaitMax       string
	CSV                    string
	From, To, GeneratedAt  string
	BreakerOpenings, Title string
}

type reportRow struct {
	Key, Words string
	N          int64
}

func (con *Console) report(c *fiber.Ctx) error {
	if _, err := con.session(c, c.Cookies(Cookie)); err != nil {
		return err
	}
	id := c.Params("showId")
	if !waitroom.ValidID(id) { // booking answers 404 for the ids it does not take
		return problem.New(http.StatusNotFound, problem.NotFound, "There is no such show.")
	}
	if con.figures == nil { // a console without booking behind it (the contract test's)
		return problem.New(http.StatusServiceUnavailable, problem.ServiceUnavailable, "Booking is not configured.")
	}
	var r salereport.Report
	if err := con.figures.get(c.UserContext(), "/admin/v1/shows/"+id+"/report", &r); err != nil {
		var se *statusError
		switch {
		case errors.As(err, &se) && se.status == http.StatusNotFound:
			return problem.New(http.StatusNotFound, problem.NotFound, "There is no such show.")
		case errors.As(err, &se) && se.status == http.StatusServiceUnavailable:
			c.Set(fiber.HeaderRetryAfter, "1")
			return problem.New(http.StatusServiceUnavailable, problem.ServiceUnavailable,
				"The report cannot be read right now; retry in a second.")
		}
		con.log.Warn("console report", "show", id, "err", err, "requestId", edgehttp.RequestID(c))
		return problem.New(http.StatusBadGateway, problem.BadGateway, "Booking did not answer with the report.")
	}
	var b bytes.Buffer
	if err := reportTmpl.Execute(&b, pageOf(r)); err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	pagekit.Secure(c, pagePolicy)
	return c.Send(b.Bytes())
}

// pageOf lays a report out for report.html.
func pageOf(r salereport.Report) reportPage {
	p := reportPage{R: r, Title: r.Title,
		Series: timeChart("chart-flow", "Arrivals, admissions, holds, confirmations and refunds per minute", "happened",
			[]series{{"arrivals", "s0", r.Arrivals}, {"admissions", "s1", r.Admitted}, {"holds", "s2", r.Holds},
				{"confirmations", "s3", r.Confirmed}, {"refunds", "s4", r.Refunds}}),
		Queue: timeChart("chart-queue", "Fans in line at each minute's end", "stood",
			[]series{{"in line", "s0", r.QueueLength}}),
		Waits: waitChart(r.WaitSeconds), Funnel: funnelChart(r.Funnel),
		Gross: money(r.Revenue.Gross, r.Revenue.Currency), Refunded: money(r.Revenue.Refunded, r.Revenue.Currency),
		Net:     money(r.Revenue.Net, r.Revenue.Currency),
		WaitP50: seconds(r.WaitSeconds.P50), WaitP90: seconds(r.WaitSeconds.P90),
		WaitP99: seconds(r.WaitSeconds.P99), WaitMax: seconds(r.WaitSeconds.Max),
		CSV:  "/admin/v1/shows/" + r.ShowID + "/report.csv",
		From: r.From.UTC().Format("2006-01-02 15:04"), To: r.To.UTC().Format("15:04"),
		GeneratedAt:     r.GeneratedAt.UTC().Format("2006-01-02 15:04:05"),
		BreakerOpenings: strconv.FormatInt(r.Payments.BreakerOpenings, 10)}
	for _, k := range salereport.Keys(r.Refusals) {
		row, _ := waitroom.ReasonOf(k)
		p.Refusals = append(p.Refusals, reportRow{Key: k, Words: row.Means, N: r.Refusals[k]})
	}
	for _, k := range salereport.Keys(r.Payments.Outcomes) {
		p.Outcomes = append(p.Outcomes, reportRow{Key: k, N: r.Payments.Outcomes[k]})
	}
	for _, k := range salereport.Keys(r.Revenue.ByCategory) {
		p.Revenue = append(p.Revenue, reportRow{Key: k, Words: money(r.Revenue.ByCategory[k], r.Revenue.Currency),
			N: r.Revenue.Seats[k]})
	}
	return p
}

// money says minor units in the currency's major ones (two decimals: every currency the catalog takes has them).
func money(minor int64, currency string) string {
	sign := ""
	if minor < 0 {
		sign, minor = "-", -minor
	}
	return sign + strconv.FormatInt(minor/100, 10) + "." + strconv.FormatInt(100+minor%100, 10)[1:] + " " + currency
}
