// Package env reads a binary's configuration from its environment: the one set of rules every flashseat binary
// (edge, booking, paysim) reads its variables by. A value is trimmed of spaces; empty or unset means the default;
// a value that does not parse is reported and the default kept, and every problem is collected, so one start-up
// names them all (Err). Reading goes through a getenv function: os.Getenv in main, a map in tests, and a recorder
// in deploy's tests, which check that every variable the deployment files set is one a binary reads.
package env

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Reader reads typed variables through getenv and collects the problems.
type Reader struct {
	getenv func(string) string
	errs   []error
}

// New returns a reader over getenv.
func New(getenv func(string) string) *Reader { return &Reader{getenv: getenv} }

// Fail records a problem that is not one variable's parse error (two variables that disagree, a URL of the
// wrong scheme). Messages name the variable and never quote a secret.
func (r *Reader) Fail(format string, args ...any) {
	r.errs = append(r.errs, fmt.Errorf(format, args...))
}

// Err is every problem recorded, joined, or nil.
func (r *Reader) Err() error { return errors.Join(r.errs...) }

// String is name's value, or def when it is unset or blank.
func (r *Reader) String(name, def string) string {
	if v := strings.TrimSpace(r.getenv(name)); v != "" {
		return v
	}
	return def
}

// List is name's comma-separated values, each trimmed, empty ones dropped; nil when unset.
func (r *Reader) List(name string) []string {
	var out []string
	for _, v := range strings.Split(r.String(name, ""), ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// Duration is name as a Go duration ("200ms", "10s", "48h"), zero or more: zero is how several variables say
// "off".
func (r *Reader) Duration(name string, def time.Duration) time.Duration {
	return value(r, name, def, time.ParseDuration, func(d time.Duration) bool { return d >= 0 },
		"a duration such as 10s")
}

// PositiveDuration is name as a Go duration above zero: an interval or a timeout, where zero would mean a busy
// loop or no time at all.
func (r *Reader) PositiveDuration(name string, def time.Duration) time.Duration {
	return value(r, name, def, time.ParseDuration, func(d time.Duration) bool { return d > 0 },
		"a positive duration such as 10s")
}

// Int is name as a decimal integer.
func (r *Reader) Int(name string, def int) int {
	return value(r, name, def, strconv.Atoi, func(int) bool { return true }, "an integer")
}

// PositiveInt is name as a decimal integer above zero: a size or a count, where zero would mean none at all.
func (r *Reader) PositiveInt(name string, def int) int {
	return value(r, name, def, strconv.Atoi, func(n int) bool { return n > 0 }, "a positive integer")
}

// IntIn is name as a decimal integer in [lo, hi].
func (r *Reader) IntIn(name string, def, lo, hi int) int {
	return value(r, name, def, strconv.Atoi, func(n int) bool { return n >= lo && n <= hi },
		fmt.Sprintf("an integer in [%d, %d]", lo, hi))
}

// Float is name as a number, zero or more (a rate, a ratio).
func (r *Reader) Float(name string, def float64) float64 {
	parse := func(v string) (float64, error) { return strconv.ParseFloat(v, 64) }
	return value(r, name, def, parse, func(f float64) bool { return f >= 0 }, "a number of at least 0") // NaN fails
}

// Bool is name as true or false (also 1/0, t/f, TRUE/FALSE: strconv.ParseBool's words).
func (r *Reader) Bool(name string, def bool) bool {
	return value(r, name, def, strconv.ParseBool, func(bool) bool { return true }, "true or false")
}

// value is name parsed by parse and accepted by ok; otherwise def, with a problem saying what was wanted.
func value[T any](r *Reader, name string, def T, parse func(string) (T, error), ok func(T) bool, want string) T {
	v := r.String(name, "")
	if v == "" {
		return def
	}
	x, err := parse(v)
	if err != nil || !ok(x) {
		r.Fail("%s: want %s, got %q", name, want, v)
		return def
	}
	return x
}
