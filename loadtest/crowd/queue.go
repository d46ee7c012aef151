package crowd

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/flashseat/flashseat/loadtest"
	"github.com/flashseat/flashseat/loadtest/client"
)

// position records a place in the queue.
func (p *fan) position(pos int) {
	p.lastPos = pos
	now := time.Now()
	ps := p.f.Positions
	if n := len(ps); n > 0 && ps[n-1].Position == pos {
		return // a repeat says nothing new to the fairness check
	}
	if len(ps) == maxPositions {
		// A stadium crowd waits minutes with a new position every tick: halve the record, keeping its spread, so
		// memory stays bounded per fan.
		for i := 0; i < maxPositions/2; i++ {
			ps[i] = ps[2*i]
		}
		ps = ps[:maxPositions/2]
	}
	p.f.Positions = append(ps, loadtest.PositionObs{At: p.cr.rec.Since(now), Position: pos})
}

const maxPositions = 128

// runProbe tries the booking routes without admission: the seat map with no admission token and with the fan's
// user token posing as one, and a hold with no admission token for a seat no hall has, so that a gate that failed
// would cost nothing but an answer other than 401/403 (the violation). It runs while the fan is provably not
// admitted (before the admitted event).
func (p *fan) runProbe(ctx context.Context) {
	p.probe = false
	probes := []func() (client.Result, error){
		func() (client.Result, error) {
			_, res, err := p.cr.c.Seats(ctx, p.user, "", p.cr.showID)
			return res, err
		},
		func() (client.Result, error) {
			_, res, err := p.cr.c.Seats(ctx, p.user, p.user, p.cr.showID)
			return res, err
		},
		func() (client.Result, error) {
			_, res, err := p.cr.c.Hold(ctx, p.user, "", p.cr.showID, []string{probeSeat}, "")
			return res, err
		},
	}
	for _, probe := range probes {
		began := time.Now()
		res, err := probe()
		p.obs(loadtest.StepProbe, began, res, err)
		p.f.Probes = append(p.f.Probes, loadtest.Probe{At: p.cr.rec.Since(time.Now()), Status: res.Status})
	}
}

// probeSeat is a seat id no hall has (row names are letters only), for the hold probe.
const probeSeat = "PROBE0"

// await follows the fan's place over SSE until admitted, sold out or closed, and falls back to polling status if
// the stream cannot be held. It returns the final status ("" when ctx ended first).
func (p *fan) await(ctx context.Context, q client.QueueState) string {
	if q.Status == "admitted" {
		// Join may already admit; the token comes with status (or the stream's admitted event).
		if st, res, err := p.cr.c.QueueStatus(ctx, p.user, p.cr.showID); err == nil && res.Status == http.StatusOK &&
			st.Status == "admitted" && st.AdmissionToken != "" {
			p.admit(st.AdmissionToken)
			return "admitted"
		}
	}
	final := ""
	err := p.cr.c.Follow(ctx, p.user, p.cr.showID, p.receipt, func(ev client.QueueEvent) bool {
		p.f.Streamed = true
		switch ev.Kind {
		case "position":
			if ev.Position > 0 {
				p.position(ev.Position)
			}
			if t := ticket(ev.ID); t > 0 {
				p.f.Ticket = t
				if receiptSeq(p.receipt) == 0 {
					// The draw gave the fan a ticket its receipt (from a join before the opening) cannot prove:
					// one status answer carries a receipt that does, the one to come back with if the waiting
					// room forgets the fan. Without it a Redis loss after the draw sends the fan to the back.
					if st, res, err := p.cr.c.QueueStatus(ctx, p.user, p.cr.showID); err == nil &&
						res.Status == http.StatusOK {
						p.keepReceipt(st.Receipt)
					}
				}
			}
			if p.probe {
				p.runProbe(ctx)
			}
		case "waiting":
			// Before the opening draw: nobody is admitted yet, so a probe now is one the gate must refuse. A crowd
			// that joined before the opening probes here; probing only on positions left it to chance (the
			// first tick after the draw may admit a whole small crowd at once, and no fan ever sees a position).
			if p.probe {
				p.runProbe(ctx)
			}
		case "admitted":
			if ev.AdmissionToken == "" {
				return true
			}
			p.admit(ev.AdmissionToken)
			final = "admitted"
			return false
		case "sold_out", "closed":
			final = ev.Kind
			return false
		case "receipt":
			// The stream's connection refreshed the fan's place receipt (after the opening's draw, a ticket
			// where the join's receipt had none): the one to come back with if the waiting room forgets the fan.
			p.keepReceipt(ev.Receipt)
		}
		return true
	})
	if final != "" || ctx.Err() != nil {
		return final
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		p.cr.streamFailures.Add(1)
	}
	// The stream ended without a verdict: poll, as the contract's fallback for clients that cannot hold a stream.
	p.f.Polled = true
	for {
		began := time.Now()
		st, res, err := p.cr.c.QueueStatus(ctx, p.user, p.cr.showID)
		p.obs(loadtest.StepStatus, began, res, err)
		if res.Status == http.StatusNotFound {
			// The waiting room has forgotten the fan (its store was lost): join again, with the place receipt.
			if verdict := p.rejoin(ctx); verdict != "" {
				return verdict
			}
			continue
		}
		if res.Status == http.StatusOK {
			if st.Receipt != "" {
				p.keepReceipt(st.Receipt) // the newest, as the cookie a browser's poll gets
			}
			switch st.Status {
			case "admitted":
				if st.AdmissionToken != "" {
					p.admit(st.AdmissionToken)
					return "admitted"
				}
			case "sold_out", "closed":
				return st.Status
			default:
				if st.Position > 0 {
					p.position(st.Position)
				}
			}
		}
		d := res.RetryAfter
		if d <= 0 {
			d = time.Second
		}
		if !wait(ctx, d) {
			return ""
		}
	}
}

// rejoin joins again after the waiting room forgot the fan, presenting its place receipt, and records a place
// lost: a re-join that gives the fan another ticket than its receipt's (when both are known; else one that puts
// it behind the last position it was told), or a show the room no longer knows. The position alone can grow with
// the same ticket: a queue rebuilt from its record counts from a cursor up to a second behind. It returns a
// verdict (admitted, sold_out, closed) when the re-join gave one, else "" to keep waiting.
func (p *fan) rejoin(ctx context.Context) string {
	p.f.Rejoins++
	for try := 0; ctx.Err() == nil; try++ {
		began := time.Now()
		presented := receiptSeq(p.receipt)
		q, res, err := p.cr.c.Join(ctx, p.user, p.cr.showID, p.receipt)
		p.obs(loadtest.StepJoin, began, res, err)
		switch {
		case res.Status == http.StatusOK:
			p.keepReceipt(q.Receipt)
			switch q.Status {
			case "admitted":
				if st, res, err := p.cr.c.QueueStatus(ctx, p.user, p.cr.showID); err == nil &&
					res.Status == http.StatusOK && st.AdmissionToken != "" {
					p.admit(st.AdmissionToken)
					return "admitted"
				}
				return ""
			case "sold_out", "closed":
				return q.Status
			}
			switch got := receiptSeq(q.Receipt); {
			case p.f.PlaceLost != "":
			case presented > 0 && got > 0:
				if got != presented {
					p.f.PlaceLost = "re-join gave it ticket " + itoa(int(got)) + " for its receipt's " + itoa(int(presented)) +
						" (position " + itoa(q.Position) + ", told " + itoa(p.lastPos) + " before)"
				}
			case p.lastPos > 0 && q.Position > p.lastPos:
				p.f.PlaceLost = "re-join put it at " + itoa(q.Position) + ", behind its place " + itoa(p.lastPos) +
					" (its receipt's ticket " + itoa(int(presented)) + ", the answer's " + itoa(int(got)) + ")"
			}
			if q.Position > 0 {
				p.position(q.Position)
			}
			return ""
		case busy(res) || err != nil:
			if !p.backoff(ctx, try, res.RetryAfter) {
				return ""
			}
		default:
			if p.f.PlaceLost == "" {
				p.f.PlaceLost = "re-join: " + client.Outcome(res, err) + " " + res.ProblemSlug()
			}
			wait(ctx, time.Second)
			return ""
		}
	}
	return ""
}

func (p *fan) admit(tok string) {
	p.adm, p.f.Token = tok, tok
	p.f.IssuedAt, p.f.TokenExp = claimTimes(tok)
	p.f.Admitted, p.f.AdmittedAt = true, p.cr.rec.Since(time.Now())
}

// ticket reads a fan's seq from a position event's id. The waiting room names position events
// "p-<seq>-<cursor>" so that Last-Event-ID can resume them; that is its own choice, not the contract's, so an id of
// another shape just leaves the ticket unknown and the queue-order check falls back on positions and timing.
func ticket(id string) int64 {
	rest, ok := strings.CutPrefix(id, "p-")
	if !ok {
		return 0
	}
	seq, _, _ := strings.Cut(rest, "-")
	n, err := strconv.ParseInt(seq, 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// keepReceipt keeps r as the fan's place receipt when it is one (the newest is the one to come back with), and its
// ticket as the fan's place in line when it names one (a pre-opening receipt names none).
func (p *fan) keepReceipt(r string) {
	if r == "" {
		return
	}
	p.receipt = r
	if seq := receiptSeq(r); seq > 0 {
		p.f.Ticket = seq
	}
}

// receiptSeq reads a place receipt's ticket (its seq claim) without verifying it: the fan is not the verifier,
// the waiting room is. 0 when unreadable or when the receipt names no ticket.
func receiptSeq(r string) int64 {
	var c struct {
		Seq int64 `json:"seq"`
	}
	if !claims(r, &c) {
		return 0
	}
	return c.Seq
}

// claimTimes reads the iat and exp claims of an admission token without verifying it (the fan is not the
// verifier; the gate is, and the token-accepted invariant checks that it did). Zeros when unreadable.
func claimTimes(tok string) (iat, exp int64) {
	var c struct {
		IAT float64 `json:"iat"`
		EXP float64 `json:"exp"`
	}
	if !claims(tok, &c) {
		return 0, 0
	}
	return int64(c.IAT), int64(c.EXP)
}

// claims decodes a JWT's claims into v, unverified; false when tok is no JWT.
func claims(tok string, v any) bool {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	return err == nil && json.Unmarshal(b, v) == nil
}
