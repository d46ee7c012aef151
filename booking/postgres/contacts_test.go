package postgres_test

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/postgres"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
)

// TestContactName: a name given is kept, also when the contact is set again without one, and a new one replaces it.
func TestContactName(t *testing.T) {
	t.Parallel()
	st := postgres.New(pgtest.New(t))
	ctx := context.Background()
	for _, c := range []struct {
		set  booking.Contact
		want string
	}{
		{booking.Contact{UserID: "u1", Email: "u1@example.com"}, ""},
		{booking.Contact{UserID: "u1", Email: "u1@example.com", Name: "प्रिया शर्मा"}, "प्रिया शर्मा"},
		{booking.Contact{UserID: "u1", Email: "new@example.com"}, "प्रिया शर्मा"},
		{booking.Contact{UserID: "u1", Email: "new@example.com", Name: "Priya"}, "Priya"},
	} {
		if err := st.SetContact(ctx, c.set); err != nil {
			t.Fatal(err)
		}
		got, err := st.Contact(ctx, "u1")
		if err != nil || got.Name != c.want || got.Email != c.set.Email {
			t.Fatalf("after %+v: %+v %v, want name %q", c.set, got, err, c.want)
		}
	}
}

// TestContactCode: a code confirms its contact once; wrong guesses count, and past the tries even the right code
// is refused; an expired code confirms nothing; a changed address is unconfirmed again.
func TestContactCode(t *testing.T) {
	t.Parallel()
	st := postgres.New(pgtest.New(t))
	ctx := context.Background()
	now := time.Now()
	hash := func(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }
	confirmed := func(user string) bool {
		c, err := st.Contact(ctx, user)
		if err != nil {
			t.Fatal(err)
		}
		return c.Confirmed
	}
	for _, u := range []string{"u1", "u2", "u3"} {
		if err := st.SetContact(ctx, booking.Contact{UserID: u, Email: u + "@example.com"}); err != nil {
			t.Fatal(err)
		}
	}
	// u1: one wrong guess, then the code; the code again is spent.
	_ = st.SetContactCode(ctx, "u1", hash("123456"), now.Add(time.Minute))
	if ok, err := st.ConfirmContact(ctx, "u1", hash("000000"), now, 5); ok || err != nil || confirmed("u1") {
		t.Fatalf("a wrong code: %t %v", ok, err)
	}
	if ok, err := st.ConfirmContact(ctx, "u1", hash("123456"), now, 5); !ok || err != nil || !confirmed("u1") {
		t.Fatalf("the code: %t %v", ok, err)
	}
	if ok, _ := st.ConfirmContact(ctx, "u1", hash("123456"), now, 5); ok {
		t.Fatal("a spent code confirmed again")
	}
	// u2: five wrong guesses use the code up.
	_ = st.SetContactCode(ctx, "u2", hash("654321"), now.Add(time.Minute))
	for range 5 {
		_, _ = st.ConfirmContact(ctx, "u2", hash("000000"), now, 5)
	}
	if ok, _ := st.ConfirmContact(ctx, "u2", hash("654321"), now, 5); ok || confirmed("u2") {
		t.Fatal("the right code after the tries ran out")
	}
	// u3: an expired code.
	_ = st.SetContactCode(ctx, "u3", hash("111111"), now.Add(-time.Second))
	if ok, _ := st.ConfirmContact(ctx, "u3", hash("111111"), now, 5); ok || confirmed("u3") {
		t.Fatal("an expired code confirmed")
	}
	// u1 changes address: unconfirmed; the same address again keeps its confirmation.
	if err := st.SetContact(ctx, booking.Contact{UserID: "u1", Email: "u1@example.com"}); err != nil || !confirmed("u1") {
		t.Fatalf("the same address again: %v", err)
	}
	if err := st.SetContact(ctx, booking.Contact{UserID: "u1", Email: "other@example.com"}); err != nil || confirmed("u1") {
		t.Fatalf("a new address stays confirmed: %v", err)
	}
}
