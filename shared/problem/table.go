package problem

import (
	"errors"
	"strings"
)

// Row maps the errors that match Err (errors.Is) to a problem: its Status, its type's Slug, and the Detail a
// client reads ("": the error's own words, see Detailed).
type Row struct {
	Err    error
	Status int
	Slug   string
	Detail string
}

// Map is a Row, as a table lists them.
func Map(err error, status int, slug, detail string) Row {
	return Row{Err: err, Status: status, Slug: slug, Detail: detail}
}

// Table is a service's one table from errors to problems. The first row an error matches wins, so specific
// errors come before the ones they wrap. Each service supplies its rows; matching is written once, here.
type Table []Row

// Match returns the first row err matches.
func (t Table) Match(err error) (Row, bool) {
	for _, r := range t {
		if errors.Is(err, r.Err) {
			return r, true
		}
	}
	return Row{}, false
}

// Problem is the row's problem for err, with the row's Detail, else Detailed(err).
func (r Row) Problem(err error) *Problem {
	d := r.Detail
	if d == "" {
		d = r.Detailed(err)
	}
	return New(r.Status, r.Slug, d)
}

// Detailed is err's own text without its sentinel's prefix ("waitroom: invalid input: show id" under the
// sentinel "waitroom: invalid input" reads "show id"), or the whole text when err does not start with it.
func (r Row) Detailed(err error) string {
	return strings.TrimPrefix(err.Error(), r.Err.Error()+": ")
}
