package waitroom

import "fmt"

// ValidID accepts a show id: 1 to 128 letters, digits, '_', '-', '.' or ':'. Show ids go into Redis keys (inside
// a hash tag, so no braces), cookie names and URLs; booking's ids are a subset.
func ValidID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') &&
			c != '_' && c != '-' && c != '.' && c != ':' {
			return false
		}
	}
	return true
}

// ValidUser accepts a user id (a token's sub): 1 to 256 bytes without control characters. External identity
// providers use ids such as "auth0|5f3c"; user ids are only ever hash fields and values, never key names.
func ValidUser(id string) bool {
	if id == "" || len(id) > 256 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x20 || id[i] == 0x7f {
			return false
		}
	}
	return true
}

func check(show, user string) error {
	if !ValidID(show) {
		return fmt.Errorf("%w: show id", ErrInvalid)
	}
	if !ValidUser(user) {
		return fmt.Errorf("%w: user id", ErrInvalid)
	}
	return nil
}
