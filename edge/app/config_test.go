package app

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/edge"
	"github.com/flashseat/flashseat/shared/infra/driver"
	"github.com/flashseat/flashseat/shared/token"
)

func TestLoadConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := LoadConfig(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != ":8080" || cfg.BookingURL.String() != "http://127.0.0.1:8081" || cfg.HeaderTimeout != 15*time.Second {
		t.Fatalf("defaults: %+v", cfg)
	}
	if cfg.ReadHeaderTimeout != 5*time.Second || cfg.ReadTimeout != 15*time.Second {
		t.Fatalf("client read timeouts %v (headers), %v (body), want 5s, 15s", cfg.ReadHeaderTimeout, cfg.ReadTimeout)
	}
	if cfg.RedisPoolSize != 256 {
		t.Fatalf("REDIS_POOL_SIZE default = %d, want 256", cfg.RedisPoolSize)
	}
	if cfg.Waitroom.Tick != 200*time.Millisecond || cfg.Waitroom.AdminToken != "" {
		t.Fatalf("waiting room defaults: %+v", cfg.Waitroom)
	}
	if cfg.Waitroom.JoinReplicas != 0 || cfg.Waitroom.JoinReplicaTimeout != 200*time.Millisecond {
		t.Fatalf("joins wait for %d replicas for %v by default, want none (200ms when set)",
			cfg.Waitroom.JoinReplicas, cfg.Waitroom.JoinReplicaTimeout)
	}
	if !cfg.AdmissionKeyGenerated || !cfg.AuthSecretGenerated || len(cfg.AuthSecret) < token.MinSecretLen {
		t.Fatal("development keys not generated")
	}
	if q, a := cfg.Limits[edge.ClassQueue], cfg.Limits[edge.ClassAPI]; q.PerIP <= a.PerIP || q.PerIPBurst <= a.PerIPBurst {
		t.Fatalf("the waiting room's limits should be gentler than the API's: %+v vs %+v", q, a)
	}
}

func TestLoadConfigKeys(t *testing.T) {
	t.Parallel()
	prev, _ := token.GenerateKey()
	prev.ID = "k1"
	pub := prev.Public()
	env := map[string]string{
		"ADMISSION_SIGNING_KEY":   testSeed,
		"ADMISSION_KEY_ID":        "k2",
		"ADMISSION_PREVIOUS_KEYS": "k1:" + b64url(pub.Key),
		"AUTH_SECRET":             testSecret,
		"TRUSTED_PROXIES":         "10.0.0.0/8,192.0.2.1",
		"RATE_PER_IP":             "0",
	}
	cfg, err := LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AdmissionKey.ID != "k2" || cfg.AdmissionKeyGenerated {
		t.Fatalf("key %q generated=%v", cfg.AdmissionKey.ID, cfg.AdmissionKeyGenerated)
	}
	if len(cfg.AdmissionPrevious) != 1 || cfg.AdmissionPrevious[0].ID != "k1" || !cfg.AdmissionPrevious[0].Key.Equal(pub.Key) {
		t.Fatalf("previous keys %+v", cfg.AdmissionPrevious)
	}
	if cfg.Limits[edge.ClassAPI].PerIP != 0 {
		t.Fatal("RATE_PER_IP=0 should disable the limit")
	}
	// A token signed with the previous key is still accepted by what the edge builds from this config.
	raw, _, _ := token.NewIssuer(prev).Issue("u", "s", "j", time.Now(), time.Minute)
	keys := token.NewStaticKeys(token.NewIssuer(cfg.AdmissionKey, cfg.AdmissionPrevious...).Keys()...)
	if _, err := token.NewVerifier(keys, 0).Verify(raw, "s", "u"); err != nil {
		t.Fatalf("previous key refused: %v", err)
	}
}

// A previous key given whole keeps the place receipts made under it, and its tokens, during a rotation.
func TestLoadConfigPreviousSigningKeys(t *testing.T) {
	t.Parallel()
	prev, _ := token.GenerateKey()
	prev.ID = "k0"
	env := map[string]string{
		"ADMISSION_SIGNING_KEY":           testSeed,
		"ADMISSION_PREVIOUS_SIGNING_KEYS": "k0:" + token.EncodeSeed(prev),
		"AUTH_SECRET":                     testSecret,
	}
	cfg, err := LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.AdmissionPreviousSigning) != 1 || cfg.AdmissionPreviousSigning[0].ID != "k0" {
		t.Fatalf("previous signing keys %+v", cfg.AdmissionPreviousSigning)
	}
	is := token.NewIssuer(cfg.AdmissionKey, cfg.AdmissionPrevious...).WithPrevious(cfg.AdmissionPreviousSigning...)
	receipt, _ := token.NewIssuer(prev).IssueReceipt("u", "s", 7, time.Now())
	if r, err := token.NewReceiptVerifier(is, 0).Verify(receipt, "s", "u"); err != nil || r.Seq != 7 {
		t.Fatalf("previous key's receipt: %+v, %v", r, err)
	}
	raw, _, _ := token.NewIssuer(prev).Issue("u", "s", "j", time.Now(), time.Minute)
	if _, err := token.NewVerifier(token.NewStaticKeys(is.Keys()...), 0).Verify(raw, "s", "u"); err != nil {
		t.Fatalf("previous key's token refused: %v", err)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]map[string]string{
		"bad seed":              {"ADMISSION_SIGNING_KEY": "c2hvcnQ"},
		"bad previous":          {"ADMISSION_PREVIOUS_KEYS": "k1"},
		"bad previous key":      {"ADMISSION_PREVIOUS_KEYS": "k1:AAAA"},
		"bad previous signing":  {"ADMISSION_PREVIOUS_SIGNING_KEYS": "AAAA"},
		"bad previous seed":     {"ADMISSION_PREVIOUS_SIGNING_KEYS": "k0:AAAA"},
		"short secret":          {"AUTH_SECRET": "short"},
		"bad booking url":       {"BOOKING_URL": "ftp://x"},
		"bad duration":          {"UPSTREAM_TIMEOUT": "soon"},
		"bad cidr":              {"TRUSTED_PROXIES": "10.0.0.0/33"},
		"bad rate":              {"RATE_PER_USER": "-1"},
		"timeouts inverted":     {"UPSTREAM_TIMEOUT": "1s", "UPSTREAM_HEADER_TIMEOUT": "2s"},
		"bad exempt":            {"RATE_EXEMPT": "x"},
		"non-integer bursts":    {"RATE_PER_IP_BURST": "1.5"},
		"queue tick too short":  {"QUEUE_TICK": "1ms"},
		"grace under flushes":   {"QUEUE_HEARTBEAT_GRACE": "1s", "QUEUE_HEARTBEAT_FLUSH": "2s"},
		"bad queue tick":        {"QUEUE_TICK": "soon"},
		"bad cluster address":   {"REDIS_CLUSTER_ADDRS": "10.0.0.1:7000,nohostport"},
		"zero redis pool":       {"REDIS_POOL_SIZE": "0"},
		"negative redis pool":   {"REDIS_POOL_SIZE": "-8"},
		"non-integer pool":      {"REDIS_POOL_SIZE": "lots"},
		"no header timeout":     {"CLIENT_HEADER_TIMEOUT": "0s"},
		"no read timeout":       {"CLIENT_READ_TIMEOUT": "0s"},
		"negative replicas":     {"QUEUE_JOIN_REPLICAS": "-1"},
		"replicas not a count":  {"QUEUE_JOIN_REPLICAS": "one"},
		"no replica timeout":    {"QUEUE_JOIN_REPLICAS": "1", "QUEUE_JOIN_REPLICA_TIMEOUT": "0s"},
		"sub-ms replica wait":   {"QUEUE_JOIN_REPLICAS": "1", "QUEUE_JOIN_REPLICA_TIMEOUT": "500us"},
		"replica wait too long": {"QUEUE_JOIN_REPLICAS": "1", "QUEUE_JOIN_REPLICA_TIMEOUT": "5s"},
	}
	for name, env := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := LoadConfig(func(k string) string { return env[k] })
			if err == nil {
				t.Fatal("accepted")
			}
			if v := env["ADMISSION_SIGNING_KEY"]; v != "" && strings.Contains(err.Error(), v) {
				t.Fatal("error message contains the secret")
			}
		})
	}
	var joined interface{ Unwrap() []error }
	_, err := LoadConfig(func(k string) string {
		return map[string]string{"BOOKING_URL": "x", "UPSTREAM_TIMEOUT": "x"}[k]
	})
	if !errors.As(err, &joined) || len(joined.Unwrap()) < 2 {
		t.Fatalf("want every problem reported at once, got %v", err)
	}
}

func TestLoadConfigRedisCluster(t *testing.T) {
	t.Parallel()
	cfg, err := LoadConfig(func(k string) string {
		return map[string]string{"REDIS_CLUSTER_ADDRS": "10.0.0.1:7000, 10.0.0.2:7000,", "REDIS_POOL_SIZE": " 64 "}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.RedisClusterAddrs; len(got) != 2 || got[0] != "10.0.0.1:7000" || got[1] != "10.0.0.2:7000" {
		t.Fatalf("cluster addresses = %q", got)
	}
	rdb, err := driver.OpenRedis(cfg.RedisURL, cfg.RedisClusterAddrs, cfg.RedisPoolSize)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	cluster, ok := rdb.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("client is %T, want a cluster client", rdb)
	}
	if got := cluster.Options().PoolSize; got != 64 {
		t.Fatalf("pool size per node = %d, want REDIS_POOL_SIZE's 64", got)
	}
}

// REDIS_POOL_SIZE sizes a single Redis's pool too, over a pool_size in REDIS_URL.
func TestLoadConfigRedisPoolSize(t *testing.T) {
	t.Parallel()
	env := map[string]string{"REDIS_URL": "redis://127.0.0.1:6379/0?pool_size=5", "REDIS_POOL_SIZE": "300"}
	cfg, err := LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	rdb, err := driver.OpenRedis(cfg.RedisURL, cfg.RedisClusterAddrs, cfg.RedisPoolSize)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if got := rdb.(*redis.Client).Options().PoolSize; got != 300 {
		t.Fatalf("pool size = %d, want REDIS_POOL_SIZE's 300", got)
	}
	// A bad value stops the start, naming the variable.
	_, err = LoadConfig(func(k string) string { return map[string]string{"REDIS_POOL_SIZE": "0"}[k] })
	if err == nil || !strings.Contains(err.Error(), "REDIS_POOL_SIZE") {
		t.Fatalf("REDIS_POOL_SIZE=0: %v, want an error naming it", err)
	}
}
