package redis_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/admission/admissiontest"
	"github.com/flashseat/flashseat/shared/infra/redistest"
	"github.com/flashseat/flashseat/shared/infra/testparallel"
	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/shared/token"
	"github.com/flashseat/flashseat/waitroom"
	"github.com/flashseat/flashseat/waitroom/internal/wrtest"
	wrredis "github.com/flashseat/flashseat/waitroom/redis"
)

// client is the test's Redis (redistest): REDIS_URL's, or the package's cluster in its cluster pass. Tests isolate
// themselves by unique show ids and delete only their own keys.
func client(t testing.TB) goredis.UniversalClient { return redistest.New(t).Client }

// newShow returns a fresh show id whose keys are deleted after the test.
func newShow(t testing.TB, rdb goredis.UniversalClient) string {
	t.Helper()
	show := "t-" + uuid.NewString()[:13]
	t.Cleanup(func() {
		ctx := context.Background()
		rdb.Del(ctx, wrredis.Keys(show)...)
	})
	return show
}

// The tests wait on ticks and Redis more than they compute, but less than booking's do (a tick's Lua and the
// lines' merges are CPU): four at once.
func TestMain(m *testing.M) {
	testparallel.AtLeast(4)
	os.Exit(redistest.RunEach(m))
}

func issuer(t testing.TB) *token.Issuer {
	t.Helper()
	k, err := token.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return token.NewIssuer(k)
}

func newService(t testing.TB, rdb goredis.UniversalClient, is *token.Issuer, opt waitroom.Options) *waitroom.Service {
	t.Helper()
	return newServiceOn(t, wrredis.New(rdb), rdb, is, opt)
}

// newServiceOn is a service over store with the records on the test's database.
func newServiceOn(t testing.TB, store waitroom.Store, rdb goredis.UniversalClient, is *token.Issuer, opt waitroom.Options) *waitroom.Service {
	t.Helper()
	return wrtest.Service(t, store, rdb, is, opt)
}

func database(t testing.TB) *pgxpool.Pool { return wrtest.Database(t) }

// configure switches the show's queue on with the given settings (written as is: tests may go below the
// operator API's limits, e.g. a 1 s token), as an operator would: on record, then cached.
func configure(t testing.TB, rdb goredis.UniversalClient, show string, rate float64, maxActive, ttl int) {
	t.Helper()
	k := admissiontest.Keeper(t, database(t), rdb)
	if _, _, err := k.Update(context.Background(), show, func(admission.Settings) (admission.Settings, error) {
		return admission.Settings{Enabled: true, AdmitPerSecond: rate, MaxActive: maxActive, TokenTTLSeconds: ttl}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// showInfo writes booking's ShowInfo fields.
func showInfo(t testing.TB, rdb goredis.UniversalClient, show string, fields map[string]any) {
	t.Helper()
	if err := rdb.HSet(context.Background(), rediskey.ShowInfo(show), fields).Err(); err != nil {
		t.Fatal(err)
	}
}

// openSale writes booking's ShowInfo for a show whose sale opened a minute ago with 10 seats free.
func openSale(t testing.TB, rdb goredis.UniversalClient, show string) {
	t.Helper()
	showInfo(t, rdb, show, map[string]any{rediskey.InfoAvailable: 10, rediskey.InfoHeld: 0,
		rediskey.InfoSaleStartsAt: ms(time.Now().Add(-time.Minute))})
}

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

func users(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// admitNext ticks show until a tick admits someone, and fails unless that is want alone.
func admitNext(t testing.TB, svc *waitroom.Service, show, want string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		snap, err := svc.Tick(context.Background(), show, false)
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("no admission (want %s): %v", want, err)
		}
		if len(snap.Grants) > 0 {
			if len(snap.Grants) != 1 || snap.Grants[0].UserID != want {
				t.Fatalf("admitted %+v, want only %s", snap.Grants, want)
			}
			return
		}
	}
}
