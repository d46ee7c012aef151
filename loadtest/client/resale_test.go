package client

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// TestExchangeCallsSpeakTheContract: each exchange call asks openapi.yaml's route with the fan's identity (and
// the admission token where buying is gated), sends the body the route reads, and decodes what it answers.
func TestExchangeCallsSpeakTheContract(t *testing.T) {
	type asked struct{ method, path, bearer, admission, body string }
	var got asked
	c := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = asked{r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("X-Admission-Token"), string(b)}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/admin/v1/shows/sh_1":
			w.Write([]byte(`{}`))
		case r.URL.Path == "/api/v1/shows/sh_1/resale":
			w.Write([]byte(`{"listings":[{"listingId":"rs_1","seatId":"A1","category":"GOLD","price":40500,"currency":"INR"}]}`))
		case r.URL.Path == "/api/v1/bookings/bk_1/resale":
			w.Write([]byte(`{"open":true,"seats":[{"seatId":"A1","cap":40500}],"listings":[]}`))
		case r.URL.Path == "/api/v1/resale/rs_1/buy":
			w.WriteHeader(http.StatusCreated)
			w.Write([]byte(`{"bookingId":"bk_2","status":"HELD","seatIds":["A1"],"totalAmount":40500}`))
		case r.Method == http.MethodPost:
			w.WriteHeader(http.StatusCreated)
			w.Write([]byte(`{"listingId":"rs_1","ticketId":"tk_1","price":40500,"fee":4050,"payout":36450,"status":"LISTED"}`))
		default:
			w.Write([]byte(`{"listingId":"rs_1","ticketId":"tk_1","status":"WITHDRAWN"}`))
		}
	}))
	c.adminToken = "adm"
	ctx := t.Context()
	tests := []struct {
		name  string
		call  func() (any, Result, error)
		want  asked
		check func(v any) bool
	}{
		{"resale policy", func() (any, Result, error) {
			err := c.SetResalePolicy(ctx, "sh_1", ResalePolicy{Enabled: true, MaxPriceRatio: 0.9, FeePercent: 10})
			return nil, Result{Status: 200}, err
		}, asked{"PUT", "/admin/v1/shows/sh_1", "Bearer adm", "", `{"resalePolicy":{"enabled":true,"feePercent":10,"maxPriceRatio":0.9}}`},
			func(any) bool { return true }},
		{"resale view", func() (any, Result, error) { return wrap(c.ResaleView(ctx, "u1", "bk_1")) },
			asked{"GET", "/api/v1/bookings/bk_1/resale", "Bearer u1", "", ""},
			func(v any) bool { rv := v.(ResaleView); return rv.Open && rv.Seats[0].Cap == 40500 }},
		{"list", func() (any, Result, error) { return wrap(c.ListTicket(ctx, "u1", "tk_1", 40500)) },
			asked{"POST", "/api/v1/tickets/tk_1/resale", "Bearer u1", "", `{"price":40500}`},
			func(v any) bool {
				l := v.(Listing)
				return l.ListingID == "rs_1" && l.Payout == 36450 && l.Status == "LISTED"
			}},
		{"withdraw", func() (any, Result, error) { return wrap(c.WithdrawListing(ctx, "u1", "tk_1")) },
			asked{"DELETE", "/api/v1/tickets/tk_1/resale", "Bearer u1", "", ""},
			func(v any) bool { return v.(Listing).Status == "WITHDRAWN" }},
		{"listings", func() (any, Result, error) { return wrap(c.Listings(ctx, "sh_1")) },
			asked{"GET", "/api/v1/shows/sh_1/resale", "", "", ""},
			func(v any) bool {
				o := v.([]Offer)
				return len(o) == 1 && o[0].ListingID == "rs_1" && o[0].Price == 40500
			}},
		{"buy", func() (any, Result, error) { return wrap(c.BuyListing(ctx, "u2", "adm-tok", "rs_1")) },
			asked{"POST", "/api/v1/resale/rs_1/buy", "Bearer u2", "adm-tok", ""},
			func(v any) bool { b := v.(Booking); return b.BookingID == "bk_2" && b.Status == "HELD" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, res, err := tt.call()
			if err != nil || res.Status >= 300 {
				t.Fatalf("got %d %v", res.Status, err)
			}
			if got.body != "" && tt.want.body != "" {
				got.body = compact(t, got.body)
			}
			if got != tt.want {
				t.Errorf("asked %+v, want %+v", got, tt.want)
			}
			if !tt.check(v) {
				t.Errorf("decoded %+v", v)
			}
		})
	}
}

func wrap[T any](v T, res Result, err error) (any, Result, error) { return v, res, err }

func compact(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("body %q: %v", s, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
