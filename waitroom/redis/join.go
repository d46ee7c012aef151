package redis

import (
	"context"
	"crypto/rand"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
)

var (
	//go:embed join.lua
	joinLua string
	//go:embed arrivals.lua
	arrivalsLua string
	joinScript  = goredis.NewScript(arrivalsLua + joinLua)
)

// joinKeys returns join.lua's keys for show, shared by every call: callers must not change them. A lookup only
// reads the cache (Peek, under its read lock): every join and status call asks, and moving the show to the front
// would take the exclusive lock each time, for the few shows on sale at once.
func (s *Store) joinKeys(show string) []string {
	if k, ok := s.keys.Peek(show); ok {
		return k
	}
	k := []string{rediskey.QueueConfig(show), rediskey.ShowInfo(show), State(show), Wait(show), Pre(show),
		Heartbeat(show), Grants(show), rediskey.QueueActive(show), Skipped(show), BotStats(show), BotPlaces(show),
		BotShadow(show), BotBrowsers(show), BotSpent(show, "-"), GrantExp(show), JTI(show), Unrecorded(show),
		BotSolves(show), Returned(show), Marks(show)}
	s.keys.Add(show, k)
	return k
}

// spentKey is the index in joinKeys of the spent-challenge key, which a join with a proof replaces.
const spentKey = 13

// own is the Ask of the waiting room's own joins and of lookups, as join.lua's arguments after the receipt.
var own = []any{waitroom.VerdictOK, "", math.MaxInt32, "0", "0", "", "-1", "0"}

// storeReasons are the reasons join.lua refuses a place for itself (waitroom.StoreReasons), its last arguments:
// the script names no reason of its own.
var storeReasons = func() []any {
	out := make([]any, len(waitroom.StoreReasons))
	for i, r := range waitroom.StoreReasons {
		out[i] = r
	}
	return out
}()

// Join implements waitroom.Store.
func (s *Store) Join(ctx context.Context, show, user string, receipted int64) (waitroom.Entry, error) {
	return s.join(ctx, show, user, true, receipted, nil)
}

// Enter implements waitroom.Store.
func (s *Store) Enter(ctx context.Context, show, user string, receipted int64, a waitroom.Ask) (waitroom.Entry, error) {
	return s.join(ctx, show, user, true, receipted, &a)
}

// Lookup implements waitroom.Store.
func (s *Store) Lookup(ctx context.Context, show, user string) (waitroom.Entry, error) {
	return s.join(ctx, show, user, false, 0, nil)
}

func (s *Store) join(ctx context.Context, show, user string, join bool, receipted int64, a *waitroom.Ask) (waitroom.Entry, error) {
	e, err := s.joinOnce(ctx, show, user, join, receipted, a)
	if errors.Is(err, errMoved) { // the partition count changed since this replica read it: once more, routed anew
		s.forgetParts(show)
		e, err = s.joinOnce(ctx, show, user, join, receipted, a)
	}
	return e, err
}

// errMoved: join.lua found another partition count in the settings than the fan was routed by.
var errMoved = errors.New("waitroom/redis: the partition count changed")

func (s *Store) joinOnce(ctx context.Context, show, user string, join bool, receipted int64, a *waitroom.Ask) (waitroom.Entry, error) {
	var flag any = "0" // constants in an interface: no allocation per call
	if join {
		flag = "1"
	}
	if err := ctx.Err(); err != nil {
		return waitroom.Entry{}, storeErr("join", err)
	}
	k, err := s.parts(ctx, show)
	if err != nil {
		return waitroom.Entry{}, err
	}
	// A partitioned queue's fan joins their own line, with the line's own ticket (waitroom.Ticket).
	home := show
	show, p, held, err := s.route(ctx, home, user, k, join)
	if err != nil {
		return waitroom.Entry{}, err
	}
	// In a partitioned queue the browser rule is kept outside the script (linebrowser.go), and each line lets a
	// prefix take its share of the prefix's places: a prefix's fans spread over the lines by their ids, so the
	// prefix is refused near its places in all, and never holds more than k·⌈places/k⌉ < places + k.
	browser := ""
	if a != nil && join {
		browser = a.Browser
		if k > 1 && browser != "" {
			held, err := s.browserHeld(ctx, home, k, user, browser)
			if err != nil {
				return waitroom.Entry{}, err
			}
			if held {
				return s.refuseBrowser(ctx, show)
			}
		}
	}
	rp, rs := waitroom.SplitTicket(k, receipted)
	if receipted > 0 && rp != p && !held {
		if q := s.receiptLine(home, user, k, rp); q >= 0 { // the lane the receipt says, its record lost
			if err := s.SetLane(ctx, home, user, s.laneName(home, k, q)); err != nil {
				return waitroom.Entry{}, err
			}
			show, p = rediskey.Line(home, q, k), q
		}
	}
	if rp == p {
		receipted = rs
	} else {
		receipted = 0 // a receipt of another line (the count changed since): no place to give back there
	}
	keys := s.joinKeys(show)
	args := make([]any, 0, 14+len(storeReasons))
	args = append(args, user, flag, receipted)
	if a == nil {
		args = append(args, own...)
	} else {
		spendFor := int64(0)
		if a.Spend != "" {
			keys = append([]string(nil), keys...) // a copy: keys is shared
			keys[spentKey] = BotSpent(show, a.Spend)
			spendFor = max(a.SpendFor.Milliseconds(), 1)
		}
		solve := int64(-1)
		if a.SolveTime >= 0 {
			solve = a.SolveTime.Milliseconds()
		}
		shadow := "0"
		if a.Shadow {
			shadow = "1"
		}
		places, inScript := a.PrefixPlaces, browser
		if k > 1 {
			inScript = ""
			if places < math.MaxInt32 {
				places = (places + k - 1) / k
			}
		}
		args = append(args, a.Verdict, a.Prefix, places, shadow, spendFor, inScript, solve,
			a.TurnHold.Milliseconds())
	}
	// The jti prefix of an admission at once (threshold mode); unused otherwise. Then what the record says of
	// a fan whose ticket a rebuilt queue's cursor had passed.
	returning, flags := "", ""
	if a != nil {
		returning, flags = a.Returning, waitroom.Flags(a.Verdict)
	}
	args = append(args, rand.Text()[:16], returning, flags)
	args = append(args, storeReasons...)
	args = append(args, waitroom.MarkEvery, k)
	run := func() ([]any, error) {
		if join && s.replicas != nil {
			return s.replicas.join(ctx, show, keys, args) // answered once its write is on the replicas (replicas.go)
		}
		return joinScript.Run(ctx, s.joins, keys, args...).Slice()
	}
	r, err := run()
	if err == nil && k > 1 && len(r) > 0 && str(r[0]) == "unknown" {
		// A line without its copy of the show's settings: copied now (a tick copies them too), asked again.
		if err = s.syncLine(ctx, rediskey.ShowOf(show), show); err == nil {
			r, err = run()
		}
	}
	if err != nil {
		return waitroom.Entry{}, storeErr("join", err)
	}
	e, err := s.entry(ctx, "join", show, user, r)
	if err != nil || k <= 1 {
		return e, lineErr(show, err)
	}
	if browser != "" && e.Status == waitroom.Waiting && !e.Shadow {
		if err := s.takeBrowser(ctx, home, k, user, browser); err != nil {
			return waitroom.Entry{}, err
		}
	}
	return s.inLines(ctx, home, k, p, e)
}

// entry reads the reply of join.lua or bypass.lua (op) for user: the kinds both scripts answer with, read once.
func (s *Store) entry(ctx context.Context, op, show, user string, r []any) (waitroom.Entry, error) {
	e := waitroom.Entry{Found: true}
	kind, _ := r[0].(string)
	switch kind {
	case "unknown":
		return e, waitroom.ErrNoSettings
	case "moved":
		return e, errMoved
	case "restore":
		return e, waitroom.ErrNoState
	case "reserve":
		return e, &waitroom.SeqsError{LastSeq: num(r[1])}
	case "closed":
		ok, err := s.Exists(ctx, rediskey.ShowOf(show))
		if err != nil {
			return e, err
		}
		if !ok {
			return e, waitroom.ErrUnknownShow
		}
		e.Status = waitroom.Closed
	case "sold_out":
		e.Status = waitroom.SoldOut
	case "admitted":
		g, err := parseGrant(user, str(r[1]))
		if err != nil {
			return e, err
		}
		e.Status, e.Grant = waitroom.Admitted, &g
	case "pre", "pending":
		e.Status, e.Pre, e.Pending = waitroom.Waiting, kind == "pre", kind == "pending"
		e.OpensAt = time.UnixMilli(num(r[1]))
		e.Paused = len(r) > 2 && str(r[2]) == "1"
	case "waiting", "shadow":
		e.Status, e.Seq, e.Cursor, e.Shadow = waitroom.Waiting, num(r[1]), num(r[2]), kind == "shadow"
		if len(r) > 4 {
			e.AdmitPerSecond, _ = strconv.ParseFloat(str(r[3]), 64)
			e.Paused = str(r[4]) == "1"
		}
		if len(r) > 6 {
			e.Gap = waitroom.Gap{End: num(r[5]), Empty: num(r[6])}
		}
		if len(r) > 7 {
			e.At = num(r[7])
		}
	case "refused":
		e.Refused = str(r[1])
	case "passed":
		e.Passed = true
	case "none", "ok": // not in the line; bypass.lua's "ok": a code may admit them
		e.Found = false
	default:
		return e, fmt.Errorf("waitroom/redis: %s: unexpected reply %v", op, r)
	}
	return e, nil
}
