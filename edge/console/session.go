package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Session is a signed-in operator: a random id, who they said they are, and when the session ends.
type Session struct {
	ID       string
	Operator string
	Expires  time.Time
}

var (
	errNoSession = errors.New("console: no valid session")
	errRevoked   = errors.New("console: session signed out")
)

// sessions signs and checks the console's session cookies. The key is derived from the operator token, so every
// edge replica (which shares ADMIN_TOKEN) accepts every other's sessions, and changing the token ends them all.
// Sign-out writes the session id to Redis until the session would have expired, so it ends on every replica.
type sessions struct {
	key []byte
	rdb redis.UniversalClient
	ttl time.Duration
	now func() time.Time
}

func newSessions(adminToken string, rdb redis.UniversalClient, ttl time.Duration) *sessions {
	m := hmac.New(sha256.New, []byte(adminToken))
	m.Write([]byte("flashseat console session v1"))
	return &sessions{key: m.Sum(nil), rdb: rdb, ttl: ttl, now: time.Now}
}

// revokedKey is where a signed-out session id is kept until its expiry.
func revokedKey(id string) string { return "flashseat:console:revoked:" + id }

// issue starts a session for operator and returns it with its cookie value.
func (s *sessions) issue(operator string) (Session, string) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	ss := Session{ID: base64.RawURLEncoding.EncodeToString(b[:]), Operator: operator,
		Expires: s.now().Add(s.ttl).Truncate(time.Second)}
	payload := "v1." + ss.ID + "." + strconv.FormatInt(ss.Expires.Unix(), 10) + "." +
		base64.RawURLEncoding.EncodeToString([]byte(operator))
	return ss, payload + "." + s.mac(payload)
}

func (s *sessions) mac(payload string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// check verifies a cookie value: signature, expiry, and that nobody signed the session out.
func (s *sessions) check(ctx context.Context, raw string) (Session, error) {
	i := strings.LastIndexByte(raw, '.')
	if i < 0 || len(raw) > 512 || !hmac.Equal([]byte(raw[i+1:]), []byte(s.mac(raw[:i]))) {
		return Session{}, errNoSession
	}
	parts := strings.Split(raw[:i], ".")
	if len(parts) != 4 || parts[0] != "v1" {
		return Session{}, errNoSession
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	op, err2 := base64.RawURLEncoding.DecodeString(parts[3])
	if err != nil || err2 != nil {
		return Session{}, errNoSession
	}
	ss := Session{ID: parts[1], Operator: string(op), Expires: time.Unix(exp, 0).UTC()}
	if !s.now().Before(ss.Expires) {
		return Session{}, errNoSession
	}
	n, err := s.rdb.Exists(ctx, revokedKey(ss.ID)).Result()
	if err != nil {
		return Session{}, fmt.Errorf("console: read sign-outs: %w", err)
	}
	if n > 0 {
		return Session{}, errRevoked
	}
	return ss, nil
}

// revoke ends a session on every replica.
func (s *sessions) revoke(ctx context.Context, ss Session) error {
	ttl := time.Until(ss.Expires) + time.Second
	if ttl <= time.Second {
		return nil
	}
	if err := s.rdb.Set(ctx, revokedKey(ss.ID), "1", ttl).Err(); err != nil {
		return fmt.Errorf("console: sign out: %w", err)
	}
	return nil
}
