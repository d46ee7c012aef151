package waitroom

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"

	"github.com/flashseat/flashseat/shared/admission"
)

// The store-down trickle: a show whose operator chose admission.StoreDownTrickle keeps admitting while the
// queue's store cannot answer for it, at a rate this replica keeps alone (a token bucket per show), so N replicas
// admit N times the rate. Nothing about the line can be read then, so the trickle orders nobody: whoever asks
// while a token is free is admitted. What it still keeps:
//
//   - The settings are the record's (PostgreSQL), read at most once a trickleRead per show: an operator's change
//     made during the outage is recorded before the cache is tried, so it reaches the trickle within a second.
//   - A token exists only for an admission on record, as a tick's: the grant is recorded first, then signed with
//     the same key. Once the store is back, its keeper restores a show it lost with the record's live grants, so
//     the token passes edge's and booking's gates, counts among the active slots, and a kick finds it.
//   - A fan asking again gets the grant this replica already made them, not a second one.
//   - The bot protection's store-free refusals (accounts only, blocked prefixes) still refuse; the proof of
//     work and the prefix counts live in the store and are not asked.
//
// With the record down as well nobody is admitted: 503, as with the policy closed.

const (
	trickleRead  = time.Second            // settings and opening read from the record at most this often per show
	trickleProbe = 500 * time.Millisecond // a show's store is probed at most this often
	trickleWait  = 2 * time.Second        // the longest a probe or a record call may take
	maxTrickles  = 10000                  // shows with a trickle's memory on one replica
	maxTrickled  = 100000                 // fans one show's trickle remembers (their grant, until it expires)
)

// errStoreDownClosed is why a join is refused while the store is down and the show's policy admits nobody. It
// wraps ErrUnavailable: 503 with Retry-After, and the fan keeps trying.
var errStoreDownClosed = fmt.Errorf("%w: the queue's store is down and this show admits nobody until it is back", ErrUnavailable)

// errTrickleFull: the trickle has no token free this instant.
var errTrickleFull = fmt.Errorf("%w: the queue's store is down; admitting a few fans a second, retry", ErrUnavailable)

// errNotRead: the record has not been read yet for the show (a read is under way).
var errNotRead = errors.New("waitroom: store-down settings not read yet")

// errKnownDown is the cause given to the store-down policy when the show's store was found down already.
var errKnownDown = fmt.Errorf("%w: the queue's store is down", ErrUnavailable)

// trickles is the per-show memory of the trickle on this replica.
type trickles struct {
	once  sync.Once
	shows *lru.Cache[string, *trickleShow]
}

// trickleShow is one show's trickle: its bucket, the record's settings as last read, the last probe of its store.
type trickleShow struct {
	mu      sync.Mutex
	bucket  *rate.Limiter
	st      admission.Settings
	opens   time.Time
	readErr error // errNotRead until the first read
	readAt  time.Time
	reading bool
	down    bool
	probeAt time.Time
	probing bool
	granted *lru.Cache[string, Grant] // user -> the grant made here while the store was down
}

func (t *trickles) init() {
	t.once.Do(func() { t.shows, _ = lru.New[string, *trickleShow](maxTrickles) })
}

func (t *trickles) show(show string) *trickleShow {
	t.init()
	if ts, ok := t.shows.Get(show); ok {
		return ts
	}
	g, _ := lru.New[string, Grant](maxTrickled)
	ts := &trickleShow{bucket: rate.NewLimiter(0, 1), granted: g, readErr: errNotRead}
	if prev, ok, _ := t.shows.PeekOrAdd(show, ts); ok {
		return prev
	}
	return ts
}

// whenStoreDown answers a fan's join or poll that failed with cause: cause itself, unless the show's store does
// not answer and its operator chose the trickle, in which case the fan may be admitted now.
func (s *Service) whenStoreDown(ctx context.Context, r JoinRequest, cause error) (Place, error) {
	if answered(cause) || ctx.Err() != nil {
		return Place{}, cause
	}
	ts := s.trickle.show(r.Show)
	if !s.storeDown(ctx, ts, r.Show) {
		return Place{}, cause
	}
	st, opens, err := s.trickleSettings(ctx, ts, r.Show)
	if err != nil {
		return Place{}, cause
	}
	perSecond, on := st.WhenStoreDown.Trickle()
	switch {
	case !st.Enabled:
		return Place{}, cause // no queue to keep open: the gate cannot read the show either, so 503 as before
	case !on || st.Paused || (!opens.IsZero() && time.Now().Before(opens)):
		return Place{}, errStoreDownClosed
	}
	if b := st.Bot; b.Enabled {
		if v := who(b, r.Client); v != VerdictOK {
			return Place{}, refusal(v)
		}
	}
	if v, err := s.admitsByRecord(ctx, st, r.Show, r.User); err != nil {
		return Place{}, cause
	} else if v != VerdictOK {
		return Place{}, refusal(v)
	}
	now := time.Now()
	ts.mu.Lock()
	if g, ok := ts.granted.Get(r.User); ok && g.ExpiresAt.After(now) {
		ts.mu.Unlock()
		return Place{Status: Admitted, Grant: &g}, nil
	}
	if ts.bucket.Limit() != rate.Limit(perSecond) {
		ts.bucket.SetLimitAt(now, rate.Limit(perSecond))
	}
	ok := ts.bucket.AllowN(now, 1)
	ts.mu.Unlock()
	if !ok {
		return Place{}, errTrickleFull
	}
	g, err := s.trickleGrant(ctx, r.Show, r.User, st, now)
	if err != nil {
		return Place{}, err
	}
	ts.mu.Lock()
	ts.granted.Add(r.User, g)
	ts.mu.Unlock()
	return Place{Status: Admitted, Grant: &g}, nil
}

// trickleGrant records an admission of user and signs its token: recorded first, as every admission is.
func (s *Service) trickleGrant(ctx context.Context, show, user string, st admission.Settings, now time.Time) (Grant, error) {
	g := Grant{UserID: user, JTI: "trickle-" + rand.Text(), IssuedAt: now.Truncate(time.Second),
		ExpiresAt: now.Truncate(time.Second).Add(time.Duration(st.TokenTTLSeconds) * time.Second)}
	rctx, cancel := context.WithTimeout(ctx, trickleWait)
	err := s.queues.AddGrants(rctx, []admission.Grant{{ShowID: show, JTI: g.JTI, UserID: user,
		IssuedAt: g.IssuedAt, ExpiresAt: g.ExpiresAt}})
	cancel()
	if err != nil {
		return Grant{}, fmt.Errorf("%w: record a trickle admission: %w", ErrUnavailable, err)
	}
	raw, _, err := s.issuer.Issue(user, show, g.JTI, g.IssuedAt, g.ExpiresAt.Sub(g.IssuedAt))
	if err != nil {
		return Grant{}, fmt.Errorf("waitroom: sign a trickle admission: %w", err)
	}
	g.Token = raw
	s.log.Info("waitroom: admitted a fan by the store-down trickle", "show", show, "jti", g.JTI)
	return g, nil
}

// storeDown reports whether the show's store failed to answer its last probe (its own keys, so on a cluster the
// master that holds them). A probe older than trickleProbe is renewed in the background, one at a time, and
// nobody waits for it: a dead Redis can take seconds to fail a call. One slow reply is not an outage, and a join
// that failed for another reason must not open the trickle while the line is there to be served.
func (s *Service) storeDown(ctx context.Context, ts *trickleShow, show string) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if !ts.probing && time.Since(ts.probeAt) >= trickleProbe {
		ts.probing = true
		go s.probe(context.WithoutCancel(ctx), ts, show)
	}
	return ts.down
}

// probe asks the show's store whether it answers, and notes the answer.
func (s *Service) probe(ctx context.Context, ts *trickleShow, show string) {
	pctx, cancel := context.WithTimeout(ctx, trickleWait)
	_, err := s.store.Exists(pctx, show)
	cancel()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.down != (err != nil) {
		s.log.Warn("waitroom: the show's store changed state for the store-down policy", "show", show,
			"storeDown", err != nil, "err", err)
	}
	ts.down, ts.probeAt, ts.probing = err != nil, time.Now(), false
}

// knownDown reports whether the show's store was found down by its last probe: a join then goes to the store-down
// policy at once instead of waiting for the store to fail it again (a dial to a dead Redis is retried for
// seconds). The probe, renewed by whenStoreDown, is what finds it back.
func (t *trickles) knownDown(show string) bool {
	t.init()
	ts, ok := t.shows.Peek(show)
	if !ok {
		return false
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.down
}

// trickleSettings reads the show's settings and sale opening from the records, at most once a trickleRead and
// one read at a time (the others take the last one read, or wait for none: the fan is told to retry).
func (s *Service) trickleSettings(ctx context.Context, ts *trickleShow, show string) (admission.Settings, time.Time, error) {
	ts.mu.Lock()
	if ts.reading || time.Since(ts.readAt) < trickleRead {
		st, opens, err := ts.st, ts.opens, ts.readErr
		ts.mu.Unlock()
		return st, opens, err
	}
	ts.reading = true
	ts.mu.Unlock()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), trickleWait)
	defer cancel()
	st, _, _, err := s.queues.Record().Settings(rctx, show)
	var d Durable
	if err == nil {
		d, err = s.record.Queue(rctx, show)
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.st, ts.opens, ts.readErr, ts.readAt, ts.reading = st, d.SaleStartsAt, err, time.Now(), false
	return st, d.SaleStartsAt, err
}

// answered reports whether err is the waiting room's own answer (a refusal, an unknown show, a draw under way, a
// malformed request...) rather than a store that failed: those stand whatever the store-down policy.
func answered(err error) bool {
	var ref *Refusal
	for _, known := range []error{ErrUnknownShow, ErrNotInQueue, ErrDrawPending, ErrInvalid, ErrTooManyStreams,
		ErrHumanUnavailable, context.Canceled} {
		if errors.Is(err, known) {
			return true
		}
	}
	return errors.As(err, &ref)
}
