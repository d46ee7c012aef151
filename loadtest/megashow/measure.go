package megashow

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"
)

// info is Redis's INFO figures the report needs, summed over every master of a cluster.
type info struct {
	used    int64   // used_memory, bytes
	cpu     float64 // used_cpu_user + used_cpu_sys, seconds
	masters int
	cpuOf   map[string]float64 // each master's cpu, by address
}

// busiestShare is the busiest master's share of the CPU the masters spent between from and in.
func (in info) busiestShare(from info) float64 {
	var top, sum float64
	for addr, c := range in.cpuOf {
		d := c - from.cpuOf[addr]
		sum += d
		top = max(top, d)
	}
	if sum <= 0 {
		return 0
	}
	return top / sum
}

func redisInfo(ctx context.Context, rdb goredis.UniversalClient) (info, error) {
	if rdb == nil {
		return info{}, errNoRedis
	}
	var mu sync.Mutex
	sum := info{cpuOf: map[string]float64{}}
	add := func(ctx context.Context, c *goredis.Client) error {
		s, err := c.Info(ctx, "memory", "cpu").Result()
		if err != nil {
			return err
		}
		one := parseInfo(s)
		mu.Lock()
		sum.used, sum.cpu, sum.masters = sum.used+one.used, sum.cpu+one.cpu, sum.masters+1
		sum.cpuOf[c.Options().Addr] = one.cpu
		mu.Unlock()
		return nil
	}
	switch c := rdb.(type) {
	case *goredis.ClusterClient:
		if err := c.ForEachMaster(ctx, add); err != nil {
			return info{}, err
		}
	case *goredis.Client:
		if err := add(ctx, c); err != nil {
			return info{}, err
		}
	default:
		return info{}, fmt.Errorf("megashow: cannot read INFO through a %T", rdb)
	}
	return sum, nil
}

func parseInfo(s string) info {
	var in info
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch k {
		case "used_memory":
			in.used, _ = strconv.ParseInt(v, 10, 64)
		case "used_cpu_user", "used_cpu_sys":
			f, _ := strconv.ParseFloat(v, 64)
			in.cpu += f
		}
	}
	return in
}

// RSS sums the resident memory of the processes (Linux /proc; "self" for this one), in bytes.
func RSS(pids ...string) (int64, error) {
	var sum int64
	for _, pid := range pids {
		f, err := os.Open("/proc/" + pid + "/status")
		if err != nil {
			return 0, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				sum += kb << 10
			}
		}
		f.Close()
	}
	return sum, nil
}
