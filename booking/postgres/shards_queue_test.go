package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flashseat/flashseat/booking/postgres"
	"github.com/flashseat/flashseat/shared/admission"
	admpostgres "github.com/flashseat/flashseat/shared/admission/postgres"
	"github.com/flashseat/flashseat/shared/audit"
	"github.com/flashseat/flashseat/shared/infra/pgtest"
	"github.com/flashseat/flashseat/waitroom"
	wrpostgres "github.com/flashseat/flashseat/waitroom/postgres"
)

// TestMoveShowCarriesTheQueue moves a show whose queue has a record (settings, a phase and its outbox event, an
// admission), a waiting room's record, a bypass code with a use and audit entries: all of it lands on the new
// shard and leaves the old, where another show's queue rows stay.
func TestMoveShowCarriesTheQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	catalog, oldPool, newPool := pgtest.New(t), pgtest.New(t), pgtest.New(t)
	cat := postgres.New(catalog)
	sh, other := seedShow(t, cat), seedShow(t, cat)
	queues, rooms, log := admpostgres.New(oldPool), wrpostgres.New(oldPool), audit.New(oldPool)
	now := time.Now()
	for _, show := range []string{sh.ID, other.ID} {
		if _, _, _, err := queues.Update(ctx, show, func(s admission.Settings) (admission.Settings, error) {
			s.Enabled, s.AdmitPerSecond, s.MaxActive = true, 5, 5
			return s, nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := queues.RecordPhase(ctx, admission.PhaseChange{Show: show, Phase: admission.PhaseSoldOut, At: now}); err != nil {
			t.Fatal(err)
		}
		if err := queues.AddGrants(ctx, []admission.Grant{{ShowID: show, JTI: "j-" + show, UserID: "u1",
			IssuedAt: now, ExpiresAt: now.Add(time.Hour)}}); err != nil {
			t.Fatal(err)
		}
		if _, err := rooms.SaveSeed(ctx, show, "seed"); err != nil {
			t.Fatal(err)
		}
		hash := []byte("hash-" + show)
		if err := rooms.AddBypassCodes(ctx, show, []waitroom.BypassCode{{ID: "bc-" + show, Hint: "H", Uses: 2,
			ExpiresAt: now.Add(time.Hour)}}, [][]byte{hash}); err != nil {
			t.Fatal(err)
		}
		if _, err := rooms.RedeemBypass(ctx, show, hash, admission.Grant{ShowID: show, JTI: "jb-" + show,
			UserID: "u2", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if err := log.Record(ctx, audit.Entry{Action: "queue.update", ShowID: show, New: []byte(`{"enabled":true}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := log.Record(ctx, audit.Entry{Action: "site.update"}); err != nil { // of no show: stays
		t.Fatal(err)
	}

	if _, err := postgres.MoveShow(ctx, catalog, oldPool, newPool, sh.ID); err != nil {
		t.Fatal(err)
	}
	// Per table: the moved show's rows on the new shard, and on the old one the other show's only.
	for _, c := range []struct {
		table, where string
		want         int
	}{
		{"queue_settings", "show_id = $1", 1},
		{"queue_grants", "show_id = $1", 2},
		{"queue_phase", "show_id = $1", 1},
		{"queue_outbox", "show_id = $1", 1},
		{"waitroom_queues", "show_id = $1", 1},
		{"bypass_codes", "show_id = $1", 1},
		{"bypass_uses", "jti = 'jb-' || $1", 1},
		{"audit_log", "show_id = $1", 1},
	} {
		n := func(pool *pgxpool.Pool, show string) int {
			var n int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+c.table+` WHERE `+c.where, show).Scan(&n); err != nil {
				t.Fatalf("%s: %v", c.table, err)
			}
			return n
		}
		if got := n(newPool, sh.ID); got != c.want {
			t.Errorf("%s: the new shard has %d rows of the moved show, want %d", c.table, got, c.want)
		}
		if got := n(oldPool, sh.ID); got != 0 {
			t.Errorf("%s: the old shard kept %d rows of the moved show", c.table, got)
		}
		if got := n(oldPool, other.ID); got != c.want {
			t.Errorf("%s: the old shard has %d rows of the show that stays, want %d", c.table, got, c.want)
		}
	}
	// The moved record answers on the new shard: the settings, and the fan's bypass admission given back.
	if s, _, found, err := admpostgres.New(newPool).Settings(ctx, sh.ID); err != nil || !found || !s.Enabled {
		t.Fatalf("moved settings: %+v %v %v", s, found, err)
	}
	use, err := wrpostgres.New(newPool).RedeemBypass(ctx, sh.ID, []byte("hash-"+sh.ID), admission.Grant{
		ShowID: sh.ID, JTI: "jb2", UserID: "u2", IssuedAt: now, ExpiresAt: now.Add(time.Hour)})
	if err != nil || !use.Again || use.Grant.JTI != "jb-"+sh.ID {
		t.Fatalf("the moved bypass use: %+v %v", use, err)
	}
	if es, err := audit.New(oldPool).List(ctx, audit.Filter{}); err != nil || len(es) != 2 {
		t.Fatalf("old shard's audit entries: %d %v, want the other show's and the one of no show", len(es), err)
	}
}
