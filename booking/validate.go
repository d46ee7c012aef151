package booking

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of operator input. They keep one request from building a hall nobody can render or a row that cannot be
// named by a seat id.
const (
	maxName        = 200
	maxHalls       = 20
	maxRows        = 100
	maxSeatsPerRow = 200
	maxHallSeats   = 20000
	maxPrice       = 1_000_000_000_00 // 1e11 minor units
)

// text checks a required or optional free-text field: valid UTF-8, no control characters, bounded.
func text(field, v string, required bool, max int) (string, error) {
	v = strings.TrimSpace(v)
	switch {
	case !utf8.ValidString(v):
		return "", Unprocessable("%s is not valid UTF-8", field)
	case required && v == "":
		return "", Unprocessable("%s is required", field)
	case utf8.RuneCountInString(v) > max:
		return "", Unprocessable("%s is longer than %d characters", field, max)
	}
	for _, r := range v {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return "", Unprocessable("%s contains control characters", field)
		}
	}
	return v, nil
}

// validRow accepts row labels of one to three capital letters, so "A12" reads unambiguously as row A, seat 12.
func validRow(s string) bool {
	if len(s) < 1 || len(s) > 3 {
		return false
	}
	for _, c := range s {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

// validCategory accepts names like GOLD, PLATINUM_PLUS.
func validCategory(s string) bool {
	if len(s) < 1 || len(s) > 32 {
		return false
	}
	for i, c := range s {
		if !(c >= 'A' && c <= 'Z') && !(i > 0 && (c == '_' || (c >= '0' && c <= '9'))) {
			return false
		}
	}
	return true
}

func validCurrency(s string) bool {
	if len(s) != 3 {
		return false
	}
	for _, c := range s {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

// ValidID reports whether s can be an id of ours; anything else is unknown without asking a store (and keeps
// junk out of Redis keys and logs).
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') && c != '_' && c != '-' {
			return false
		}
	}
	return true
}
