package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/flashseat/flashseat/booking/payment"
)

// LedgerPath is the simulator's own (non-Stripe) endpoint listing every intent with the money it holds, so a
// checker in another process (the load test) can compare the gateway's books with booking's ledger.
const LedgerPath = "/_sim/ledger"

// Entry is one intent in the simulator's ledger.
type Entry struct {
	IntentID   string `json:"intentId"`
	BookingID  string `json:"bookingId"`
	Status     string `json:"status"`
	Capturable int64  `json:"capturable"` // authorized, not captured
	Received   int64  `json:"received"`   // captured
	Refunded   int64  `json:"refunded"`
}

// Ledger returns every intent with the money it holds.
func (s *Server) Ledger() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Entry, 0, len(s.intents))
	for _, in := range s.intents {
		out = append(out, Entry{IntentID: in.obj.ID, BookingID: in.obj.Metadata[payment.MetaBooking], Status: in.obj.Status,
			Capturable: in.obj.AmountCapturable, Received: in.obj.AmountReceived, Refunded: in.refunded})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].IntentID < out[j].IntentID })
	return out
}

func (s *Server) ledger(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		writeError(w, http.StatusUnauthorized, payment.WireError{Type: "invalid_request_error", Message: "Invalid API Key provided."})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": s.Ledger()})
}

// FetchLedger reads the ledger of a simulator running at baseURL.
func FetchLedger(ctx context.Context, baseURL, apiKey string) ([]Entry, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(baseURL, "/")+LedgerPath, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+apiKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("sim: ledger: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("sim: ledger: HTTP %d", resp.StatusCode)
	}
	var body struct {
		Entries []Entry `json:"entries"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("sim: ledger: %w", err)
	}
	return body.Entries, nil
}

// Refunded returns how much of an intent has been refunded.
func (s *Server) Refunded(id string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if in, ok := s.intents[id]; ok {
		return in.refunded
	}
	return 0
}
