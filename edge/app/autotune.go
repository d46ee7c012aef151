package app

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/audit"
	"github.com/flashseat/flashseat/shared/pulse"
	pulseredis "github.com/flashseat/flashseat/shared/pulse/redis"
	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
)

// autotuneActor is who the audit log says made autotune's changes.
const autotuneActor = "autotune"

// runAutotune sets the admission rate of every show with autotune on, every `every`, from booking's pulse
// (waitroom.Tune decides). One replica drives a show at a time: it holds the show's lease in Redis (SET NX with an
// expiry of two rounds, renewed while it runs), so replicas do not each apply the same step. A rate that does not
// change writes nothing; one that does is an ordinary settings change (recorded, cached, announced to every
// replica) audited as made by "autotune".
func runAutotune(ctx context.Context, e *Edge, svc *waitroom.Service, every time.Duration) {
	replica := rand.Text()
	t := time.NewTicker(every)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := autotuneRound(ctx, e, svc, replica, every)
		if err != nil && !failing && ctx.Err() == nil {
			e.Log.Warn("autotune: a round failed; the rates stay as they are", "err", err)
		}
		failing = err != nil
	}
}

func autotuneRound(ctx context.Context, e *Edge, svc *waitroom.Service, replica string, every time.Duration) error {
	// A round that cannot finish (a store that stopped answering) must not hold every later one up.
	ctx, cancel := context.WithTimeout(ctx, max(10*every, 10*time.Second))
	defer cancel()
	shows, err := e.Queues.Record().Shows(ctx)
	if err != nil {
		return err
	}
	var report pulse.Report
	read := false
	for show := range shows {
		s, err := e.Queues.Settings(ctx, show)
		if err != nil {
			return err
		}
		if !s.Autotune.Enabled || s.QueueMode() == admission.ModeOff {
			continue
		}
		if ok, err := lease(ctx, e.Redis, show, replica, 2*every); err != nil || !ok {
			if err != nil {
				return err
			}
			continue
		}
		if !read {
			rs, err := pulseredis.Read(ctx, e.Redis, e.Config.Waitroom.PulseNamespace, time.Now())
			if err != nil {
				return err
			}
			report, read = pulse.Merge(rs), true
		}
		seats, known := seatsLeft(ctx, e.Redis, show)
		rate, reason := waitroom.Tune(s, report, seats, known)
		if rate == s.AdmitPerSecond {
			continue
		}
		old, now, err := svc.UpdateSettings(ctx, show, func(cur admission.Settings) (admission.Settings, error) {
			if !cur.Autotune.Enabled {
				return cur, nil // switched off since it was read: the operator's word stands
			}
			cur.AdmitPerSecond, cur.AutotuneReason = rate, reason
			return cur, nil
		})
		if err != nil {
			return err
		}
		if old != now && e.Audit != nil {
			en := audit.Entry{Actor: autotuneActor, Action: "queue.autotune", ShowID: show}
			en.Old, _ = json.Marshal(old)
			en.New, _ = json.Marshal(now)
			if err := e.Audit.Record(ctx, en); err != nil {
				e.Log.Error("autotune: audit", "show", show, "err", err)
			}
			e.Log.Info("autotune: admission rate set", "show", show, "from", old.AdmitPerSecond,
				"to", now.AdmitPerSecond, "reason", reason)
		}
	}
	return nil
}

// lease takes (or renews, when this replica holds it) the show's autotune lease for ttl.
func lease(ctx context.Context, rdb goredis.UniversalClient, show, replica string, ttl time.Duration) (bool, error) {
	key := rediskey.AutotuneLease(show)
	ok, err := rdb.SetNX(ctx, key, replica, ttl).Result()
	if err != nil || ok {
		return ok, err
	}
	holder, err := rdb.Get(ctx, key).Result()
	if errors.Is(err, goredis.Nil) {
		return false, nil // expired between the two: the next round takes it
	}
	if err != nil || holder != replica {
		return false, err
	}
	return true, rdb.PExpire(ctx, key, ttl).Err()
}

// seatsLeft reads booking's count of a show's free seats (ShowInfo); known is false when booking has not
// published it.
func seatsLeft(ctx context.Context, rdb goredis.UniversalClient, show string) (int64, bool) {
	v, err := rdb.HGet(ctx, rediskey.ShowInfo(show), rediskey.InfoAvailable).Result()
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}
