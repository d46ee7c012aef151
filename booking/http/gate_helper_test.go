package http_test

import (
	"time"

	goredis "github.com/redis/go-redis/v9"
)

func goredisZ(exp time.Time, member string) goredis.Z {
	return goredis.Z{Score: float64(exp.UnixMilli()), Member: member}
}
