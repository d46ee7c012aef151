package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/flashseat/flashseat/booking/postgres"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
)

// TestReportKept: a show's report is summarised once the show has started, once however often the sweep runs,
// and served from the summary from then on; the per-fan rows it was built from go once the summary is older than
// the retention, and the report stays what it was.
func TestReportKept(t *testing.T) {
	pool := pgtest.New(t)
	st := postgres.New(pool)
	ctx := context.Background()
	sh := seedShow(t, st)
	joined := time.Now().Add(-30 * time.Minute).UTC().Truncate(time.Second)
	// Two fans' places and one admission, as the waiting room records them.
	if _, err := pool.Exec(ctx, `INSERT INTO queue_joins (show_id, user_id, joined_at) VALUES ($1, 'u1', $2), ($1, 'u2', $2)`,
		sh.ID, joined); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO queue_grants (show_id, jti, user_id, issued_at, expires_at)
		VALUES ($1, 'j1', 'u1', $2, $3)`, sh.ID, joined.Add(90*time.Second), joined.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	before, err := st.SaleReport(ctx, sh.ID, now)
	if err != nil {
		t.Fatal(err)
	}
	if before.Funnel.Joined != 2 || before.Funnel.Admitted != 1 || before.WaitSeconds.Max != 90 {
		t.Fatalf("the report from the raw rows: %+v %+v", before.Funnel, before.WaitSeconds)
	}
	if n, err := st.SummariseSales(ctx, now); err != nil || n != 0 {
		t.Fatalf("summarised a show not started: %d %v", n, err)
	}
	started := sh.StartsAt.Add(time.Minute)
	for i, want := range []int{1, 0} { // the second sweep finds it done
		if n, err := st.SummariseSales(ctx, started); err != nil || n != want {
			t.Fatalf("sweep %d: summarised %d (%v), want %d", i, n, err, want)
		}
	}
	// A row written after the summary is not the sale's: the summary stands.
	if _, err := pool.Exec(ctx, `INSERT INTO queue_joins (show_id, user_id, joined_at) VALUES ($1, 'late', now())`, sh.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := st.ForgetFans(ctx, started.Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("forgot the fans of a summary younger than the retention: %d %v", n, err)
	}
	kept, err := st.SaleReport(ctx, sh.ID, started)
	if err != nil || kept.Funnel.Joined != 2 || kept.Retention.SummarisedAt == nil || kept.Retention.FanRowsDeletedAt != nil {
		t.Fatalf("the summarised report: %+v %+v %v", kept.Funnel, kept.Retention, err)
	}
	if n, err := st.ForgetFans(ctx, started.Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("forget fans: %d %v, want 1", n, err)
	}
	var rows int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM queue_joins WHERE show_id = $1) +
		(SELECT count(*) FROM queue_grants WHERE show_id = $1)`, sh.ID).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("per-fan rows left: %d %v", rows, err)
	}
	after, err := st.SaleReport(ctx, sh.ID, started.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if after.Funnel != before.Funnel || after.WaitSeconds.Max != before.WaitSeconds.Max || after.Retention.FanRowsDeletedAt == nil {
		t.Errorf("after the fans were forgotten: %+v %+v %+v, want the funnel %+v", after.Funnel, after.WaitSeconds,
			after.Retention, before.Funnel)
	}
}
