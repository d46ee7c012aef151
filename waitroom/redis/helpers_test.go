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
	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/shared/token"
	"github.com/flashseat/flashseat/waitroom"
	"github.com/flashseat/flashseat/waitroom/internal/wrtest"
	wrredis "github.com/flashseat/flashseat/waitroom/redis"
)

// client connects to REDIS_URL (default the local dev Redis); tests isolate themselves by unique show ids and
// delete only their own keys.
func client(t testing.TB) *goredis.Client {
	t.Helper()
	url := os.Getenv("REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	opts, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	opts.PoolSize = 64
	rdb := goredis.NewClient(opts)
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("redis: %v", err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// newShow returns a fresh show id whose keys are deleted after the test.
func newShow(t testing.TB, rdb *goredis.Client) string {
	t.Helper()
	show := "t-" + uuid.NewString()[:13]
	t.Cleanup(func() {
		ctx := context.Background()
		rdb.Del(ctx, wrredis.Keys(show)...)
		rdb.SRem(ctx, rediskey.QueueRecords, show)
	})
	return show
}

func issuer(t testing.TB) *token.Issuer {
	t.Helper()
	k, err := token.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return token.NewIssuer(k)
}

func newService(t testing.TB, rdb *goredis.Client, is *token.Issuer, opt waitroom.Options) *waitroom.Service {
	t.Helper()
	return newServiceOn(t, wrredis.New(rdb), rdb, is, opt)
}

// newServiceOn is a service over store with the records on the test's database.
func newServiceOn(t testing.TB, store waitroom.Store, rdb *goredis.Client, is *token.Issuer, opt waitroom.Options) *waitroom.Service {
	t.Helper()
	return wrtest.Service(t, store, rdb, is, opt)
}

func database(t testing.TB) *pgxpool.Pool { return wrtest.Database(t) }

// configure switches the show's queue on with the given settings (written as is: tests may go below the
// operator API's limits, e.g. a 1 s token), as an operator would: on record, then cached.
func configure(t testing.TB, rdb *goredis.Client, show string, rate float64, maxActive, ttl int) {
	t.Helper()
	k := admissiontest.Keeper(t, database(t), rdb)
	if _, _, err := k.Update(context.Background(), show, func(admission.Settings) (admission.Settings, error) {
		return admission.Settings{Enabled: true, AdmitPerSecond: rate, MaxActive: maxActive, TokenTTLSeconds: ttl}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// showInfo writes booking's ShowInfo fields.
func showInfo(t testing.TB, rdb *goredis.Client, show string, fields map[string]any) {
	t.Helper()
	if err := rdb.HSet(context.Background(), rediskey.ShowInfo(show), fields).Err(); err != nil {
		t.Fatal(err)
	}
}

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

func users(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}
