package rowlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking"
	"github.com/flashseat/flashseat/booking/rowlock"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
)

func TestOneSeatManyFans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t)
	if err := rowlock.Setup(ctx, pool); err != nil {
		t.Fatal(err)
	}
	// The hold outlives the crowd: 100 transactions queued on one row lock take longer than 200 ms on a loaded
	// two-core machine, and a hold that lapsed meanwhile would rightly be won a second time.
	st := rowlock.New(pool, 2*time.Second)
	seats := []booking.Seat{{ID: "A1", Category: "GOLD", Price: 10}, {ID: "A2", Category: "GOLD", Price: 10},
		{ID: "A3", Category: "GOLD", Price: 10}}
	if err := st.CreateShow(ctx, "s1", seats); err != nil {
		t.Fatal(err)
	}
	var won atomic.Int64
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := st.Hold(ctx, fmt.Sprint("u", i), "s1", []string{"A2", "A1"})
			var ce *booking.ConflictError
			switch {
			case err == nil:
				won.Add(1)
			case errors.As(err, &ce):
			default:
				t.Errorf("hold: %v", err)
			}
		}()
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d holds, want 1", won.Load())
	}
	time.Sleep(2100 * time.Millisecond)
	if _, err := st.Hold(ctx, "late", "s1", []string{"A1"}); err != nil {
		t.Fatalf("hold after expiry: %v", err)
	}
}
