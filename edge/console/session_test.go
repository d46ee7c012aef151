package console

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/infra/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.RunEach(m)) }

func testRedis(t *testing.T) redis.UniversalClient { return redistest.New(t).Client }

// TestSessions: a session cookie verifies until it expires or is signed out; one signed with another operator
// token, or changed in any part, never does.
func TestSessions(t *testing.T) {
	ctx := context.Background()
	rdb := testRedis(t)
	s := newSessions("operator-token-1", rdb, time.Hour)
	ss, raw := s.issue("Asha")
	t.Cleanup(func() { rdb.Del(ctx, revokedKey(ss.ID)) })
	if strings.Contains(raw, "operator-token-1") {
		t.Fatal("the cookie carries the operator token")
	}
	got, err := s.check(ctx, raw)
	if err != nil || got.Operator != "Asha" || got.ID != ss.ID {
		t.Fatalf("check: %+v, %v", got, err)
	}
	parts := strings.Split(raw, ".")
	for i := range parts {
		forged := append([]string(nil), parts...)
		forged[i] += "x"
		if _, err := s.check(ctx, strings.Join(forged, ".")); !errors.Is(err, errNoSession) {
			t.Errorf("part %d changed: %v", i, err)
		}
	}
	if _, err := newSessions("operator-token-2", rdb, time.Hour).check(ctx, raw); !errors.Is(err, errNoSession) {
		t.Errorf("another token's key accepted the session: %v", err)
	}
	later := *s
	later.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	if _, err := later.check(ctx, raw); !errors.Is(err, errNoSession) {
		t.Errorf("expired session: %v", err)
	}
	if err := s.revoke(ctx, ss); err != nil {
		t.Fatal(err)
	}
	// Another replica (its own sessions value, the same token and Redis) refuses it too.
	if _, err := newSessions("operator-token-1", rdb, time.Hour).check(ctx, raw); !errors.Is(err, errRevoked) {
		t.Errorf("signed-out session: %v", err)
	}
}
