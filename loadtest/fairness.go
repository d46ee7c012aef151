package loadtest

import (
	"sort"
	"time"

	"github.com/flashseat/flashseat/shared/rankcorr"
)

// Fairness measures admission against queue position.
type Fairness struct {
	// Checked is how many admitted fans had a position observed after the sale opened.
	Checked int `json:"checked"`
	// Overtaken lists fans admitted after more fans than were ahead of them: the queue-order invariant.
	Overtaken []Overtake `json:"overtaken,omitempty"`
	// Spearman is the rank correlation between each fan's place in line (its ticket when known, else an estimate
	// from its position) and its admission order (1: admitted exactly in order).
	Spearman float64 `json:"spearman"`
	// Tickets is how many admitted fans had both their ticket (seq) and their token's iat known: the exact check.
	Tickets int `json:"tickets"`
	// Inversions are fans admitted (by their token's iat) in a later second than a fan behind them in line.
	Inversions []Inversion `json:"inversions,omitempty"`
}

// Inversion is a fan admitted after a fan that stood behind it.
type Inversion struct {
	Fan, Ticket                        int64 // the fan passed over
	IssuedAt                           int64
	Overtaker, OvertakerTicket, OverAt int64
	// Rejoined: the fan passed over had to join again because the waiting room had forgotten it (its store lost
	// the fan's place); it came back with its receipt.
	Rejoined bool `json:"rejoined,omitempty"`
}

// checkTickets is the exact queue-order check: in ticket order, admission seconds (iat) never go backwards. Fans
// of one admission tick share a second, so equal seconds are in order; a fan admitted a second or more after one
// behind it in line was passed over.
func checkTickets(fans []*Fan, fr *Fairness) {
	var xs []*Fan
	for _, f := range fans {
		if f.Admitted && f.Ticket > 0 && f.IssuedAt > 0 {
			xs = append(xs, f)
		}
	}
	fr.Tickets = len(xs)
	sort.Slice(xs, func(i, j int) bool { return xs[i].Ticket < xs[j].Ticket })
	// Walk from the back of the line: the earliest admission seen so far behind each fan.
	var earliest *Fan
	for i := len(xs) - 1; i >= 0; i-- {
		f := xs[i]
		if earliest != nil && earliest.IssuedAt < f.IssuedAt {
			fr.Inversions = append(fr.Inversions, Inversion{Fan: int64(f.ID), Ticket: f.Ticket, IssuedAt: f.IssuedAt,
				Overtaker: int64(earliest.ID), OvertakerTicket: earliest.Ticket, OverAt: earliest.IssuedAt,
				Rejoined: f.Rejoins > 0})
		}
		if earliest == nil || f.IssuedAt <= earliest.IssuedAt {
			earliest = f
		}
	}
}

// Overtake is a fan who saw position Position at At, and yet saw Admitted fans let in before itself after that.
type Overtake struct {
	Fan      int           `json:"fan"`
	At       time.Duration `json:"at"`
	Position int           `json:"position"`
	Admitted int           `json:"admitted"`
}

// CheckFairness compares every admitted fan's observed positions with the admissions the crowd saw. A fan told
// "position p" at time t has p-1 fans ahead of it, so at most p-1 others may be admitted after t and before it.
// slack absorbs event delivery skew: admissions within slack after t (they may have happened before the position
// was computed) and within slack before the fan's own admission (the same admission tick) are not counted.
// Positions before the sale opens (plus slack) are provisional, since the queue shuffles at opening, and are
// skipped. The crowd must be the show's only visitors for the count to be complete.
func CheckFairness(fans []*Fan, saleOpens, slack time.Duration) Fairness {
	var adm []time.Duration
	for _, f := range fans {
		if f.Admitted {
			adm = append(adm, f.AdmittedAt)
		}
	}
	sort.Slice(adm, func(i, j int) bool { return adm[i] < adm[j] })
	countIn := func(lo, hi time.Duration) int { // admissions with lo < at < hi
		if hi <= lo {
			return 0
		}
		a := sort.Search(len(adm), func(i int) bool { return adm[i] > lo })
		b := sort.Search(len(adm), func(i int) bool { return adm[i] >= hi })
		return max(0, b-a)
	}
	var fr Fairness
	type pair struct{ est, order float64 }
	var pairs []pair
	for _, f := range fans {
		if !f.Admitted {
			continue
		}
		var worst *Overtake
		first := true
		for _, o := range f.Positions {
			if o.At < saleOpens+slack || o.At > f.AdmittedAt {
				continue
			}
			if first {
				first = false
				fr.Checked++
				// Place in the whole line: the ticket, or the position plus everyone the crowd saw admitted by then.
				est := float64(o.Position + countIn(-1, o.At))
				if f.Ticket > 0 {
					est = float64(f.Ticket)
				}
				order := float64(countIn(-1, f.AdmittedAt) + 1)
				pairs = append(pairs, pair{est, order})
			}
			n := countIn(o.At+slack, f.AdmittedAt-slack)
			if n > o.Position-1 && (worst == nil || n-(o.Position-1) > worst.Admitted-(worst.Position-1)) {
				worst = &Overtake{Fan: f.ID, At: o.At, Position: o.Position, Admitted: n}
			}
		}
		if worst != nil {
			fr.Overtaken = append(fr.Overtaken, *worst)
		}
	}
	checkTickets(fans, &fr)
	if len(pairs) > 1 {
		est := make([]float64, len(pairs))
		ord := make([]float64, len(pairs))
		for i, p := range pairs {
			est[i], ord[i] = p.est, p.order
		}
		fr.Spearman = rankcorr.Spearman(est, ord)
	}
	return fr
}
