package driver

import (
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// clusterStateReload is how often a cluster client re-reads which node serves which slots. go-redis's default
// is a minute, and it does not re-read on a refused connection: after a master fails, every command for its
// slots would keep going to the dead node until then. Two seconds bounds that to the failover's own time.
const clusterStateReload = 2 * time.Second

// OpenRedis returns the client every flashseat service uses: a Redis Cluster client when clusterAddrs is not
// empty (each show's keys share one slot, so every script runs there unchanged), else a client of the single
// Redis at url. poolSize 0 keeps go-redis's default.
func OpenRedis(url string, clusterAddrs []string, poolSize int) (goredis.UniversalClient, error) {
	if len(clusterAddrs) > 0 {
		return goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: clusterAddrs, PoolSize: poolSize,
			ClusterStateReloadInterval: clusterStateReload}), nil
	}
	opt, err := goredis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	if poolSize > 0 {
		opt.PoolSize = poolSize
	}
	return goredis.NewClient(opt), nil
}
