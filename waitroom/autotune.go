package waitroom

import (
	"fmt"
	"math"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/pulse"
)

// Autotune's rules, after CrowdHandler's: back off hard when booking fails (payment breaker open, more than
// maxErrorShare of answers 5xx), in proportion when holds are slower than the target, and climb back gently
// (raiseBy, at least one fan a second more) while holds are well under it (below calmShare of the target). A rate
// is never above a tenth of the seats left a second: more fans than that only meet sold seats.
const (
	maxErrorShare = 0.02
	calmShare     = 0.7
	raiseBy       = 1.25
	seatsPerRate  = 10
)

// Tune is autotune's decision for a show with settings s, given booking's merged report r (none: r.At is zero)
// and the show's seats left (seatsKnown false: not known). It returns the rate to set, within the autotune
// bounds, and the reason; the rate is s.AdmitPerSecond when nothing calls for a change.
func Tune(s admission.Settings, r pulse.Report, seatsLeft int64, seatsKnown bool) (rate float64, reason string) {
	a := s.Autotune
	rate = s.AdmitPerSecond
	target := float64(a.TargetHoldP99Ms)
	switch {
	case r.At.IsZero():
		return rate, "no report from booking: holding the rate"
	case r.Breaker == "open":
		rate, reason = rate/2, "payment breaker open: halving"
	case r.ErrorShare() > maxErrorShare:
		rate, reason = rate/2, fmt.Sprintf("%.1f%% of booking's answers 5xx (%d of them 503): halving",
			100*r.ErrorShare(), r.Unavailable)
	case r.HoldP99Ms > target:
		rate = rate * max(0.5, target/r.HoldP99Ms)
		reason = fmt.Sprintf("hold p99 %.0f ms over the %.0f ms target: lowering", r.HoldP99Ms, target)
	case r.HoldP99Ms < calmShare*target:
		rate = max(rate*raiseBy, rate+1)
		reason = fmt.Sprintf("hold p99 %.0f ms under the %.0f ms target: raising", r.HoldP99Ms, target)
	default:
		reason = fmt.Sprintf("hold p99 %.0f ms near the %.0f ms target: holding", r.HoldP99Ms, target)
	}
	if seatsKnown && rate > float64(seatsLeft)/seatsPerRate {
		rate = float64(seatsLeft) / seatsPerRate
		reason = fmt.Sprintf("%d seats left: at most %g fans a second", seatsLeft, math.Max(rate, a.MinAdmitPerSecond))
	}
	rate = math.Round(min(max(rate, a.MinAdmitPerSecond), a.MaxAdmitPerSecond)*100) / 100
	return rate, reason
}
