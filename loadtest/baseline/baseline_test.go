package baseline_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/flashseat/flashseat/loadtest/baseline"
	"github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
)

func userToken(t *testing.T, sub string) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Subject: sub}).SignedString([]byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestBaselineDecidesHoldsLikeThePlatform(t *testing.T) {
	ctx := context.Background()
	_, url := pgtest.NewWithURL(t)
	b, err := baseline.Start(ctx, baseline.Config{DatabaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	show, err := b.NewShow(ctx, []client.Seat{{SeatID: "A1", Row: "A", Number: 1, Category: "GOLD", Price: 100},
		{SeatID: "A2", Row: "A", Number: 2, Category: "GOLD", Price: 100}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(b.URL(), client.NewTransport(8), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, res, err := c.HoldAt(ctx, "/api/v1/bookings/hold", userToken(t, "u1"), show, []string{"A1"}, "")
	if err != nil || res.Status != http.StatusCreated || got.BookingID == "" {
		t.Fatalf("first hold: got %d %+v %v, want 201", res.Status, got, err)
	}
	_, res, err = c.HoldAt(ctx, "/api/v1/bookings/hold", userToken(t, "u2"), show, []string{"A1"}, "")
	if err != nil || res.Status != http.StatusConflict {
		t.Fatalf("second hold: got %d %v, want 409", res.Status, err)
	}
	if alt := res.StringList("alternatives"); len(alt) != 1 || alt[0] != "A2" {
		t.Errorf("got alternatives %v, want [A2]", alt)
	}
	_, res, _ = c.HoldAt(ctx, "/api/v1/bookings/hold", "", show, []string{"A2"}, "")
	if res.Status != http.StatusUnauthorized {
		t.Errorf("hold without a token: got %d, want 401", res.Status)
	}
}
