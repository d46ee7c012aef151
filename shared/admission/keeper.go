package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Record is the durable record of queue settings and admissions (PostgreSQL; admission/postgres).
type Record interface {
	// Settings reads a show's settings and their version; found is false when no operator ever set any.
	Settings(ctx context.Context, show string) (s Settings, version int64, found bool, err error)
	// Update changes a show's settings with fn (given the settings in force, or DefaultSettings) in one
	// transaction and returns the settings before and after and the new version.
	Update(ctx context.Context, show string, fn func(Settings) (Settings, error)) (old, now Settings, version int64, err error)
	// Shows lists the shows with a record, each with its settings' version.
	Shows(ctx context.Context) (map[string]int64, error)
	// Grants reads a show's admissions that have not expired at now: live ones and revoked ones.
	Grants(ctx context.Context, show string, now time.Time) (live, revoked []Grant, err error)
	// AddGrants records admissions (idempotent by show and jti).
	AddGrants(ctx context.Context, gs []Grant) error
	// Revoke records g as revoked (creating its row if the grant was never recorded); newly is false when it
	// was revoked already.
	Revoke(ctx context.Context, g Grant) (newly bool, err error)
	// RevokeJTI revokes the admission jti of show; ErrUnknownAdmission if none is on record.
	RevokeJTI(ctx context.Context, show, jti string) (Grant, error)
	// Admitted reports whether any admission of user to show is on record: live, expired or revoked, until
	// pruned. The waiting room asks it of a fan whose ticket a rebuilt queue's cursor had passed (served, or
	// skipped while away?).
	Admitted(ctx context.Context, show, user string) (bool, error)
	// RevokeUser revokes every live admission of user to show and returns them (none: an empty slice).
	RevokeUser(ctx context.Context, show, user string, now time.Time) ([]Grant, error)
	// Prune forgets admissions that expired before before (an expired token is refused by its exp alone), once
	// their show's after-sale report is summarised: until then they are its figures.
	Prune(ctx context.Context, before time.Time) (int64, error)
}

// pruneAfter is how long an expired admission stays on record (for lookups and audits) before Prune drops it.
const pruneAfter = 24 * time.Hour

// Presence says what the cache knows of a show's queue.
type Presence int

// What a cache lookup can find. There is no "no record" answer: the cache cannot vouch for an absence. On a Redis
// Cluster a show's settings and any global mark of completeness live on different masters, and a failover to a
// replica that lacks the newest writes loses the one without the other, so an absence in the cache is only ever a
// reason to ask the record (a queue read as off there is a queue told "closed", and a gate left open).
const (
	// Unknown: the cache holds no settings for the show (never asked of the record yet, or Redis lost the show's
	// keys): the record decides, and the state is restored from it (a show without a record is cached as off).
	Unknown Presence = iota
	// Cached: the cache holds the show's settings, revocations and active admissions (or, for a show without a
	// record, the settings "off" the record gave).
	Cached
)

// Cache is the fast copy every hot path reads (Redis; admission/redis).
type Cache interface {
	// Lookup reads a show's settings and whether the cache can vouch for them.
	Lookup(ctx context.Context, show string) (Settings, Presence, error)
	// Version reads the record's version of a show's cached settings (0: cached as having no record); ok is
	// false when none are cached.
	Version(ctx context.Context, show string) (version int64, ok bool, err error)
	// Revoked reports which of a show's token ids have been revoked (revoked[i] for jtis[i]), in one round trip
	// however many, and whether the show's state is cached at all (if not, "not revoked" means nothing).
	Revoked(ctx context.Context, show string, jtis []string) (revoked []bool, cached bool, err error)
	// Fill writes a show's state from the record (revocations and active admissions first, the settings last, so
	// that settings in the cache mean the rest is there too). It changes nothing if the settings are cached.
	// Version 0 means the show has no record: its queue is off, cached on the show's own keys (never a global
	// one) so that the answer is lost only together with the rest of the show's state; the cache may decline
	// to keep it (a show id nobody else knows of).
	Fill(ctx context.Context, show string, s Settings, version int64, live, revoked []Grant) error
	// Put replaces cached settings with a newer version and announces the change to every replica; ok is false
	// when the show has nothing cached (Fill it instead).
	Put(ctx context.Context, show string, s Settings, version int64) (ok bool, err error)
	// Release frees an admission's active slot and revokes its token id.
	Release(ctx context.Context, g Grant) error
	// Synced reports whether the cache was filled with every show on record since it last lost its data (set by
	// MarkSynced, lost with Redis's data): Run's cue to rebuild. It says nothing of any one show's keys.
	Synced(ctx context.Context) (bool, error)
	// MarkSynced records that every show with a record was put in the cache.
	MarkSynced(ctx context.Context) error
}

// Keeper keeps the cache true to the record: it restores a show's state into the cache when a lookup finds it
// missing, rebuilds every show's after Redis lost its data (Run), and writes every operator change to the record
// first and the cache second.
type Keeper struct {
	rec   Record
	cache Cache
	log   *slog.Logger
	now   func() time.Time

	restores flights[Settings] // joined however long ago they began: a restore's answer is the record's
	// defaultMode is the site-wide mode of a show whose operator never set one (SetDefaultMode).
	defaultMode string
}

// NewKeeper returns a keeper of cache over rec.
func NewKeeper(rec Record, cache Cache, log *slog.Logger) *Keeper {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Keeper{rec: rec, cache: cache, log: log, now: time.Now}
}

// SetDefaultMode sets the site-wide queue mode (ModeOff, ModeAlways or ModeThreshold) of shows whose operator
// never set one, before the keeper is used. Every edge and booking replica must be given the same (QUEUE_MODE):
// whichever restores a show first caches the answer for all.
func (k *Keeper) SetDefaultMode(mode string) error {
	if !ValidMode(mode) {
		return fmt.Errorf("admission: queue mode must be %q, %q or %q, not %q", ModeOff, ModeAlways, ModeThreshold, mode)
	}
	k.defaultMode = mode
	return nil
}

// withDefault fills in the site-wide mode on settings that have none (DefaultSettings: no record).
func (k *Keeper) withDefault(s Settings) Settings {
	if s.Mode == "" {
		s.Mode = s.QueueMode()
		if k.defaultMode != "" {
			s.Mode = k.defaultMode
		}
		s.Enabled = s.Mode != ModeOff
	}
	return s
}

// Record is the keeper's record, for callers that read admissions directly (a kick by user).
func (k *Keeper) Record() Record { return k.rec }

// Settings returns a show's settings: from the cache, or, when the cache holds none, from the record after
// restoring the cache. Only the record may say a queue is off for want of settings. Errors wrap ErrUnavailable.
func (k *Keeper) Settings(ctx context.Context, show string) (Settings, error) {
	s, p, err := k.cache.Lookup(ctx, show)
	if err != nil {
		return Settings{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if p == Cached {
		return s, nil
	}
	return k.Restore(ctx, show)
}

// Restore rebuilds a show's cached state from the record and returns its settings. Concurrent calls for one
// show share one restore.
func (k *Keeper) Restore(ctx context.Context, show string) (Settings, error) {
	return k.restores.do(ctx, show, func(ctx context.Context) (Settings, error) { return k.restore(ctx, show) }, nil)
}

func (k *Keeper) restore(ctx context.Context, show string) (Settings, error) {
	s, version, found, err := k.rec.Settings(ctx, show)
	if err != nil {
		return Settings{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if !found {
		// Cached as off (version 0) on the show's own key, so the next joins and gate checks are answered by
		// Redis, not PostgreSQL. A failover that loses it loses it with the show's other keys, and the miss
		// comes back here; an operator's first change (version 1) replaces it (Put). A failure to cache
		// changes nothing of the answer, which the record gave.
		s = k.withDefault(DefaultSettings())
		if err := k.cache.Fill(ctx, show, s, 0, nil, nil); err != nil {
			k.log.Warn("admission: cannot cache a show's queue as off", "show", show, "err", err)
		}
		return s, nil
	}
	live, revoked, err := k.rec.Grants(ctx, show, k.now())
	if err != nil {
		return Settings{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if err := k.cache.Fill(ctx, show, s, version, live, revoked); err != nil {
		return Settings{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	k.log.Info("admission: restored a show's queue state from the record", "show", show,
		"enabled", s.Enabled, "live", len(live), "revoked", len(revoked))
	return s, nil
}

// Sync restores every show with a record whose state the cache lacks, brings up to date every show whose cached
// settings are older than the record's, then marks the cache complete.
func (k *Keeper) Sync(ctx context.Context) error {
	shows, err := k.rec.Shows(ctx)
	if err != nil {
		return fmt.Errorf("admission: sync: %w", err)
	}
	for show, version := range shows {
		cached, ok, err := k.cache.Version(ctx, show)
		if err != nil {
			return fmt.Errorf("admission: sync: %w", err)
		}
		switch {
		case !ok:
			_, err = k.restore(ctx, show)
		case cached < version:
			err = k.refresh(ctx, show)
		}
		if err != nil {
			return fmt.Errorf("admission: sync %s: %w", show, err)
		}
	}
	if err := k.cache.MarkSynced(ctx); err != nil {
		return fmt.Errorf("admission: sync: %w", err)
	}
	// Every replica runs this; the DELETE is idempotent and touches only rows a day past their expiry.
	if _, err := k.rec.Prune(ctx, k.now().Add(-pruneAfter)); err != nil {
		return fmt.Errorf("admission: prune: %w", err)
	}
	return nil
}

// refresh puts a show's settings from the record over older cached ones. Older settings are cached when a
// cluster failover promoted a replica that lacked the newest write of the show's settings (an operator's change,
// often the first switch-on over a show cached as having no queue): the show's other keys are there, so nothing
// reads as missing, and only the version tells.
func (k *Keeper) refresh(ctx context.Context, show string) error {
	s, version, _, err := k.rec.Settings(ctx, show)
	if err != nil {
		return err
	}
	ok, err := k.cache.Put(ctx, show, s, version)
	if err == nil && !ok {
		_, err = k.restore(ctx, show)
	}
	if err == nil {
		k.log.Info("admission: cached queue settings were older than the record's; replaced", "show", show,
			"version", version, "enabled", s.Enabled)
	}
	return err
}

// Run keeps the cache complete until ctx ends: every check interval it looks for the cache's completeness mark
// (gone when Redis restarted empty or was flushed, so this also covers a reconnect) and rebuilds every show when
// it is missing; every full interval it rebuilds whatever single show lost its keys and replaces settings older
// than the record's.
func (k *Keeper) Run(ctx context.Context, check, full time.Duration) {
	t := time.NewTicker(check)
	defer t.Stop()
	var last time.Time
	failing := false
	for {
		ok, err := k.cache.Synced(ctx)
		if err == nil && (!ok || time.Since(last) >= full) {
			if err = k.Sync(ctx); err == nil {
				last = time.Now()
			}
		}
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			k.log.Warn("admission: cannot sync the queue cache with the record; retrying", "err", err)
			failing = true
		case err == nil && failing:
			k.log.Info("admission: queue cache in sync with the record again")
			failing = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Update changes a show's settings: the record first, then the cache (which announces the change to every
// replica). It returns the settings before and after.
func (k *Keeper) Update(ctx context.Context, show string, fn func(Settings) (Settings, error)) (old, now Settings, err error) {
	old, now, version, err := k.rec.Update(ctx, show, func(cur Settings) (Settings, error) {
		cur = k.withDefault(cur)
		next, err := fn(cur)
		if err != nil {
			return next, err
		}
		// Every writer's blocked prefixes are stored in the one form the guard compares (Canonical).
		next.Bot = next.Bot.Canonical()
		return settle(cur, next)
	})
	if err != nil {
		return old, now, err
	}
	ok, err := k.cache.Put(ctx, show, now, version)
	if err == nil && !ok {
		// Nothing cached: restore the whole state, then put again, since a restore already in flight may have
		// read the record before this change.
		if _, err = k.Restore(ctx, show); err == nil {
			_, err = k.cache.Put(ctx, show, now, version)
		}
	}
	if err != nil {
		// Recorded: the cache catches up at its next restore or sync. Until then this replica's answer is an
		// error, so the operator retries (the same settings again change nothing).
		return old, now, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return old, now, nil
}

// AddGrants records admissions just made.
func (k *Keeper) AddGrants(ctx context.Context, gs []Grant) error {
	if len(gs) == 0 {
		return nil
	}
	return k.rec.AddGrants(ctx, gs)
}

// Release ends an admission: recorded as revoked, then its active slot freed and its token id refused in the
// cache. Booking calls it when the admitted fan's booking is confirmed or cancelled.
func (k *Keeper) Release(ctx context.Context, g Grant) error {
	if g.JTI == "" {
		return nil
	}
	if _, err := k.rec.Revoke(ctx, g); err != nil {
		return fmt.Errorf("admission: release %s: %w", g.JTI, err)
	}
	return k.cache.Release(ctx, g)
}

// Kick revokes the admission jti of show (an operator's decision) and returns it.
func (k *Keeper) Kick(ctx context.Context, show, jti string) (Grant, error) {
	g, err := k.rec.RevokeJTI(ctx, show, jti)
	if err != nil {
		return g, err
	}
	return g, k.cache.Release(ctx, g)
}

// KickUser revokes every live admission of user to show, and also extra: admissions the caller knows of that may
// not be recorded yet (made this very tick). It returns what it revoked; ErrUnknownAdmission when nothing.
func (k *Keeper) KickUser(ctx context.Context, show, user string, extra ...Grant) ([]Grant, error) {
	gs, err := k.rec.RevokeUser(ctx, show, user, k.now())
	if err != nil {
		return nil, err
	}
	for _, e := range extra {
		known := false
		for _, g := range gs {
			known = known || g.JTI == e.JTI
		}
		if !known {
			newly, err := k.rec.Revoke(ctx, e)
			if err != nil {
				return nil, err
			}
			if newly {
				gs = append(gs, e)
			}
		}
	}
	if len(gs) == 0 {
		return nil, fmt.Errorf("%w: user has no live admission to this show", ErrUnknownAdmission)
	}
	var errs []error
	for _, g := range gs {
		errs = append(errs, k.cache.Release(ctx, g))
	}
	return gs, errors.Join(errs...)
}
