package redis

import (
	"context"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
)

// The access copy (waitroom.AccessStore): who is registered for a show and who is invited to which lane, spread
// over rediskey.InvitationBuckets pairs of hashes, each pair on one slot with its copy marker.

var _ waitroom.AccessStore = (*Store)(nil)

// AccessKeys lists a show's keys of the access copy (for tests and cleanup).
func AccessKeys(show string) []string {
	var out []string
	for i := range rediskey.InvitationBuckets {
		out = append(out, rediskey.RegistrationBucket(show, i))
	}
	// One user id in each invitation bucket is what names it: Invitation buckets by user.
	seen := map[string]bool{}
	for n := 0; len(seen) < rediskey.InvitationBuckets && n < 10000; n++ {
		k := rediskey.Invitation(show, "u"+strconv.Itoa(n))
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// Access implements waitroom.AccessStore: one round trip to the fan's bucket.
func (s *Store) Access(ctx context.Context, show, user string) (waitroom.Access, error) {
	pipe := s.rdb.Pipeline()
	reg := pipe.HMGet(ctx, rediskey.Registration(show, user), user, rediskey.RegistrationCopied)
	inv := pipe.HGet(ctx, rediskey.Invitation(show, user), user)
	if _, err := pipe.Exec(ctx); err != nil && err != goredis.Nil {
		return waitroom.Access{}, storeErr("access", err)
	}
	var a waitroom.Access
	if v := reg.Val(); len(v) == 2 {
		a.Registered, a.Copied = v[0] != nil, v[1] != nil
	}
	lane, err := inv.Result()
	switch {
	case err == nil:
		a.Invited, a.Lane = true, lane
	case err != goredis.Nil:
		return waitroom.Access{}, storeErr("access", err)
	}
	return a, nil
}

// CopyAccess implements waitroom.AccessStore. Each fan is written to their registration bucket, and an invited
// one to their invitation bucket with the lane (field the user id, value the lane: what the admission split reads).
func (s *Store) CopyAccess(ctx context.Context, show string, fans []waitroom.AccessFan) error {
	pipe := s.rdb.Pipeline()
	for _, f := range fans {
		pipe.HSet(ctx, rediskey.Registration(show, f.User), f.User, "1")
		if f.Invited {
			pipe.HSet(ctx, rediskey.Invitation(show, f.User), f.User, f.Lane)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return storeErr("copy access", err)
	}
	return nil
}

// MarkAccessCopied implements waitroom.AccessStore: every bucket's marker.
func (s *Store) MarkAccessCopied(ctx context.Context, show string) error {
	pipe := s.rdb.Pipeline()
	for i := range rediskey.InvitationBuckets {
		pipe.HSet(ctx, rediskey.RegistrationBucket(show, i), rediskey.RegistrationCopied, "1")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return storeErr("mark access copied", err)
	}
	return nil
}

// ForgetAccessCopy implements waitroom.AccessStore: every bucket's marker dropped, so the next join rebuilds.
func (s *Store) ForgetAccessCopy(ctx context.Context, show string) error {
	pipe := s.rdb.Pipeline()
	for i := range rediskey.InvitationBuckets {
		pipe.HDel(ctx, rediskey.RegistrationBucket(show, i), rediskey.RegistrationCopied)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return storeErr("forget access copy", err)
	}
	return nil
}

// SpendProof implements waitroom.AccessStore: the key a join spends the same proof under (join.lua).
func (s *Store) SpendProof(ctx context.Context, show, id string, ttl time.Duration) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, BotSpent(show, id), 1, ttl).Result()
	if err != nil {
		return false, storeErr("spend proof", err)
	}
	return ok, nil
}
