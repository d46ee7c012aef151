package admission

// Who may join a show's queue (Tuning.Access): anyone, only fans registered for the show, or only fans invited by
// one of its invitation waves (waitroom/registration.go, waitroom/wave.go). A fan the access setting does not let
// in is refused a new place; one who already holds a place keeps it, as with every refusal.
const (
	AccessOpen       = "open"
	AccessRegistered = "registered"
	AccessInvited    = "invited"
)

// ValidAccess accepts the access settings ("" is open: rows written before access existed).
func ValidAccess(a string) bool {
	switch a {
	case "", AccessOpen, AccessRegistered, AccessInvited:
		return true
	}
	return false
}

// Gated reports whether the access setting lets only some fans join.
func (t Tuning) Gated() bool { return t.Access == AccessRegistered || t.Access == AccessInvited }
