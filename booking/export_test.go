package booking

import "time"

// SetClaimWindow shortens the window a hold's claim and insert share (and the orphan grace that follows from it),
// so that a test of the window does not wait 20 s.
func (s *Holds) SetClaimWindow(d time.Duration) { s.window = d }
