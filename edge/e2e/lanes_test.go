package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	fsclient "github.com/flashseat/flashseat/loadtest/client"
	"github.com/flashseat/flashseat/loadtest/platformtest"
	"github.com/flashseat/flashseat/shared/rediskey"
)

// TestLanesShareAdmissions: through the real edge and booking, a show's admission is shared between a fan club
// (0.7) and the general lane (0.3). Fans invited to the fan club (the invitations' copy written as a wave writes
// it) and uninvited fans join; the show's active cap of 200 stops admission at exactly 200 (nobody books), and
// the lanes' figures say the fan club got 140 and the general lane 60, each within 10%. A second show whose fan
// club has only 20 fans: they get their 20 and the general lane the other 180, at the whole rate.
func TestLanesShareAdmissions(t *testing.T) {
	t.Parallel()
	p, c := journeyPlatform(t)
	ctx := context.Background()
	rdb := platformRedis(t, p)
	off := false
	sale := func(club, general int) (string, time.Duration) {
		show := newShow(t, c, showSpec{title: "Tughlaq " + uuid.NewString()[:6], saleIn: -time.Minute})
		lanes := []fsclient.Lane{{Name: "fanclub", Share: 0.7}, {Name: "general", Share: 0.3}}
		if _, err := c.PutQueue(ctx, show, fsclient.QueueSettings{Enabled: true, AdmitPerSecond: 40, MaxActive: 200,
			TokenTTLSeconds: 600, Paused: true, Lanes: lanes, BotProtection: &fsclient.BotProtection{Enabled: &off}}); err != nil {
			t.Fatal(err)
		}
		fans := make([]fsclient.Guest, club+general)
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(fans); i += 8 {
					g, res, err := c.NewGuest(ctx) // not guestFan: its Fatal belongs to the test's goroutine
					if err != nil {
						t.Errorf("guest: %d %v", res.Status, err)
						return
					}
					fans[i] = g
					if i < club {
						u := fans[i].UserID
						if err := rdb.HSet(ctx, rediskey.Invitation(show, u), u, "fanclub").Err(); err != nil {
							t.Error(err)
							return
						}
					}
					if q, res, err := c.Join(ctx, fans[i].Token, show, ""); err != nil || q.Status != "waiting" {
						t.Errorf("fan %d: %+v %d %v", i, q, res.Status, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		if err := c.Pause(ctx, show, false); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for deadline := start.Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
			q, err := c.Queue(ctx, show)
			if err != nil {
				t.Fatal(err)
			}
			if len(q.Lanes) == 2 && q.Lanes[0].Admitted+q.Lanes[1].Admitted >= 200 {
				return show, time.Since(start)
			}
			if time.Now().After(deadline) {
				t.Fatalf("admitted %+v in a minute", q.Lanes)
			}
		}
	}
	lanes := func(show string) (club, general int) {
		time.Sleep(300 * time.Millisecond) // the cap holds: nothing moves after 200
		q, err := c.Queue(ctx, show)
		if err != nil {
			t.Fatal(err)
		}
		return q.Lanes[0].Admitted, q.Lanes[1].Admitted
	}

	show, took := sale(170, 90)
	club, general := lanes(show)
	t.Logf("200 admissions at 0.7/0.3 in %v: fan club %d, general %d", took, club, general)
	if club+general != 200 || club < 126 || club > 154 || general < 54 || general > 66 {
		t.Errorf("fan club %d, general %d: want 140 and 60 within 10%% of 200", club, general)
	}

	show, took = sale(20, 200)
	club, general = lanes(show)
	t.Logf("200 admissions with a fan club of 20 in %v: fan club %d, general %d", took, club, general)
	if club != 20 || general != 180 {
		t.Errorf("fan club %d, general %d: want 20 and 180 (the idle fan club's share lent)", club, general)
	}
	if took > 10*time.Second { // 180 at the general lane's own 0.3 of 40/s would take 15 s; lent, about 5 s
		t.Errorf("200 admissions took %v at 40/s: the idle lane's share was not lent", took)
	}
}

// platformRedis is a client on the platform's single Redis, closed when the test ends.
func platformRedis(t *testing.T, p *platformtest.Platform) *goredis.Client {
	t.Helper()
	opt, err := goredis.ParseURL(p.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}
