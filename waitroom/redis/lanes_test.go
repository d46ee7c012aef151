package redis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/admission/admissiontest"
	"github.com/flashseat/flashseat/shared/rediskey"
	"github.com/flashseat/flashseat/waitroom"
	wrredis "github.com/flashseat/flashseat/waitroom/redis"
)

// fanClub is the lanes of these tests: a fan club with 0.7 of the rate, everyone else 0.3.
var fanClub = admission.Lanes{{Name: "fanclub", Share: 0.7}, {Name: admission.GeneralLane, Share: 0.3}}

// configureLanes switches the show's queue on with lanes of k partitions each, as an operator would.
func configureLanes(t testing.TB, rdb goredis.UniversalClient, show string, lanes admission.Lanes, k int, rate float64, paused ...bool) {
	t.Helper()
	kp := admissiontest.Keeper(t, database(t), rdb)
	if _, _, err := kp.Update(context.Background(), show, func(admission.Settings) (admission.Settings, error) {
		st := admission.DefaultSettings()
		st.Enabled, st.Mode, st.AdmitPerSecond, st.MaxActive, st.TokenTTLSeconds = true, admission.ModeAlways, rate, 100000, 600
		st.Partitions, st.Lanes, st.Paused = k, lanes, len(paused) > 0 && paused[0]
		return st, st.Validate()
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, line := range rediskey.Lines(show, lanes.Count()*k)[1:] {
			rdb.Del(context.Background(), wrredis.Keys(line)...)
		}
	})
}

// laneShow is a fresh show on sale with the fan club's lanes of k partitions each, at rate, and its service.
func laneShow(t *testing.T, k int, rate float64) (goredis.UniversalClient, string, *waitroom.Service) {
	t.Helper()
	rdb := client(t)
	show := newShow(t, rdb)
	svc := newService(t, rdb, issuer(t), waitroom.Options{MaxScan: 100, Grace: 10 * time.Minute})
	configureLanes(t, rdb, show, fanClub, k, rate)
	openSale(t, rdb, show)
	return rdb, show, svc
}

// invite writes the waiting room's copy of each fan's invitation to lane, as a wave does.
func invite(t testing.TB, rdb goredis.UniversalClient, show, lane string, fans []string) {
	t.Helper()
	for _, u := range fans {
		if err := rdb.HSet(context.Background(), rediskey.Invitation(show, u), u, lane).Err(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rdb.Del(context.Background(), rediskey.Invitation(show, u)) })
	}
}

// laneOfGrant is the lane whose lines issued a grant, from its jti (rediskey.LineOfJTI): lane i holds lines
// i·k to i·k+k-1 of the show's lanes·k.
func laneOfGrant(show string, lanes, k int, jti string) int {
	line := rediskey.LineOfJTI(show, jti)
	for p, id := range rediskey.Lines(show, lanes*k) {
		if id == line {
			return p / k
		}
	}
	return -1
}

// admitCount ticks until at least n fans are admitted and counts them by the prefix of their ids, checking each
// grant was made on the lines of the lane its fan is in. It counts whole ticks: a tick's grants are listed lane by
// lane, so cutting the last tick at n would take its tail (the general lane's) off and skew the shares whenever
// a slow machine's ticks are far apart and so large.
func admitCount(t *testing.T, svc *waitroom.Service, show string, k, n int) map[string]int {
	t.Helper()
	got, seen := map[string]int{}, map[string]bool{}
	for deadline, total := time.Now().Add(time.Minute), 0; total < n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("admitted %d of %d: %v", total, n, got)
		}
		snap, err := svc.Tick(context.Background(), show, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range snap.Grants {
			if seen[g.UserID] {
				t.Fatalf("%s admitted twice", g.UserID)
			}
			seen[g.UserID] = true
			prefix, _, _ := strings.Cut(g.UserID, "-")
			want := 1 // general
			if prefix == "club" {
				want = 0
			}
			if lane := laneOfGrant(show, 2, k, g.JTI); lane != want {
				t.Fatalf("%s admitted from lane %d, want %d (jti %s)", g.UserID, lane, want, g.JTI)
			}
			got[prefix]++
			total++
		}
	}
	return got
}

// The lanes' admissions follow their shares: over 200 admissions the fan club (0.7) gets 140 and the general
// lane 60, each within 10%, with one partition a lane and with three. Fan-club fans are invited (the
// invitation's hash as a wave writes it); general fans are not, or hold an invitation naming no lane.
func TestLanesFollowShares(t *testing.T) {
	for _, k := range []int{1, 3} {
		t.Run(map[int]string{1: "one partition", 3: "three partitions"}[k], func(t *testing.T) {
			rdb, show, svc := laneShow(t, k, 200)
			club, general := users("club-", 300), users("gen-", 300)
			invite(t, rdb, show, "fanclub", club)
			invite(t, rdb, show, "", general[:100]) // invited to no lane in particular: the general lane
			joinTimed(t, svc, show, append(append([]string(nil), general...), club...), 8, 0)
			got := admitCount(t, svc, show, k, 200)
			total := got["club"] + got["gen"]
			t.Logf("%d admissions over lanes 0.7/0.3, %d partitions each: %v", total, k, got)
			if f := float64(got["club"]) / float64(total); f < 0.63 || f > 0.77 {
				t.Errorf("admitted %v: the fan club's part %.2f, want 0.7 within 10%%", got, f)
			}
			c, err := wrredis.New(rdb).Counts(context.Background(), show)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Lanes) != 2 || c.Lanes[0].Name != "fanclub" || c.Lanes[0].Admitted < 126 ||
				c.Lanes[0].Waiting+c.Lanes[0].Admitted != 300 || c.Lanes[1].Waiting+c.Lanes[1].Admitted != 300 {
				t.Errorf("lane figures %+v, want each lane's 300 fans waiting or admitted", c.Lanes)
			}
		})
	}
}

// A lane with nobody waiting lends its share: with 20 fan-club fans and 400 general ones, 200 admissions give
// the fan club its 20 and the general lane the other 180, far beyond its 0.3; and a show whose fan club never
// has anyone admits its general fans at the whole rate.
func TestLanesIdleLaneLends(t *testing.T) {
	rdb, show, svc := laneShow(t, 2, 100)
	club, general := users("club-", 20), users("gen-", 400)
	invite(t, rdb, show, "fanclub", club)
	joinTimed(t, svc, show, append(append([]string(nil), club...), general...), 8, 0)
	start := time.Now()
	got := admitCount(t, svc, show, 2, 200)
	took := time.Since(start)
	t.Logf("200 admissions at 100/s with a fan club of 20: %v in %v", got, took)
	if got["club"] != 20 || got["gen"] < 180 {
		t.Errorf("admitted %v, want the fan club's 20 and the general lane the rest", got)
	}
	// At the general lane's own 0.3 of 100/s, 180 would take 6 s; lent the whole rate, under 2 s and a margin.
	if took > 4*time.Second {
		t.Errorf("200 admissions took %v at 100/s: the idle lane's share was not lent", took)
	}
}

// A fan's position counts only the fans ahead in their lane, and their ETA runs at their lane's part of the
// rate: fan-club fans who join after five general fans are first, second and third in their lane.
func TestLanesPositions(t *testing.T) {
	rdb, show, svc := laneShow(t, 3, 10)
	ctx := context.Background()
	invite(t, rdb, show, "fanclub", []string{"c0", "c1", "c2"})
	for _, u := range []string{"g0", "g1", "g2", "g3", "g4"} {
		if _, err := svc.Join(ctx, show, u); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * waitroom.MarkEvery * time.Millisecond) // a mark apart: the order across lines is known
	}
	for i, u := range []string{"c0", "c1", "c2"} {
		p, err := svc.Join(ctx, show, u)
		if err != nil {
			t.Fatal(err)
		}
		if p.Position != int64(i+1) {
			t.Errorf("%s's position %d, want %d (only the fan club ahead counts)", u, p.Position, i+1)
		}
		time.Sleep(2 * waitroom.MarkEvery * time.Millisecond)
	}
	if p, err := svc.Join(ctx, show, "g4"); err != nil || p.Position != 5 {
		t.Errorf("g4 again: %+v %v, want position 5 among the general lane", p, err)
	}
	// Positions hold on the streams' side too: the tick's lines place each ticket within its lane.
	snap, err := svc.Tick(ctx, show, false)
	if err != nil {
		t.Fatal(err)
	}
	seqs, err := wrredis.New(rdb).Seqs(ctx, show, []string{"c2", "g4"})
	if err != nil {
		t.Fatal(err)
	}
	// At 10/s a tick may have admitted a fan of each lane; the fan club's third is at most third.
	if pc, pg := snap.Position(seqs["c2"]), snap.Position(seqs["g4"]); pc < 1 || pc > 3 || pg < 3 || pg > 5 {
		t.Errorf("tick positions: c2 %d (want 1-3), g4 %d (want 3-5)", pc, pg)
	}
	if f := snap.Lines.Share(seqs["c2"]); f < 0.69 || f > 0.71 {
		t.Errorf("the fan club's part of the rate %.2f, want 0.7 while both lanes wait", f)
	}
}

// A fan waiting in a lane stays there: an invitation drawn after they joined does not route them to another
// lane's line, where they would hold a second ticket. After Redis loses the queue and the lanes' records, a fan
// back with their place receipt gets their ticket back in the lane the receipt names.
func TestLanesHoldFansAcrossInvitationsAndLosses(t *testing.T) {
	rdb, show, svc := laneShow(t, 1, 0.01)
	ctx := context.Background()
	invite(t, rdb, show, "fanclub", []string{"c0"})
	join := func(u, receipt string) waitroom.Place {
		t.Helper()
		p, err := svc.JoinWithReceipt(ctx, show, u, receipt)
		if err != nil || p.Status != waitroom.Waiting || p.Seq == 0 {
			t.Fatalf("join %s: %+v %v", u, p, err)
		}
		return p
	}
	lane := func(seq int64) int { p, _ := waitroom.SplitTicket(2, seq); return p }
	c0, g0 := join("c0", ""), join("g0", "")
	if lane(c0.Seq) != 0 || lane(g0.Seq) != 1 {
		t.Fatalf("c0 on line %d, g0 on line %d: want the fan club's line 0 and the general lane's 1", lane(c0.Seq), lane(g0.Seq))
	}
	invite(t, rdb, show, "fanclub", []string{"g0"}) // a wave draws g0 while they wait in the general lane
	if again := join("g0", ""); again.Seq != g0.Seq {
		t.Fatalf("g0 after their invitation: ticket %d, want their general ticket %d kept", again.Seq, g0.Seq)
	}

	// The loss: every line's keys, the fans' lanes and the invitations' copy.
	for _, line := range rediskey.Lines(show, 2) {
		rdb.Del(ctx, wrredis.Keys(line)...)
	}
	for _, u := range []string{"c0", "g0"} {
		rdb.Del(ctx, rediskey.FanLane(show, u), rediskey.Invitation(show, u))
	}
	if back := join("c0", c0.Receipt); back.Seq != c0.Seq || back.Position != 1 {
		t.Fatalf("c0 back with their receipt: %+v, want ticket %d first in the fan club", back, c0.Seq)
	}
	if back := join("c0", ""); back.Seq != c0.Seq {
		t.Fatalf("c0 looked up after: ticket %d, want %d (held to the fan club again)", back.Seq, c0.Seq)
	}
}

// Positions are honest within a lane: fan-club and general fans join interleaved over three partitions a lane;
// each position told (paused, so nobody moves) is, within max(3, 1%), the count of the same lane's fans admitted
// before that fan once admission runs, though the two lanes are served at 0.7 and 0.3 of the rate.
func TestLanesPositionsAreHonest(t *testing.T) {
	rdb := client(t)
	show := newShow(t, rdb)
	// Nobody heartbeats here: the grace outlasts the test, or on a loaded machine the fans joined first count
	// as gone (30 s) before their turn, and are never admitted.
	svc := newService(t, rdb, issuer(t), waitroom.Options{Grace: 10 * time.Minute})
	configureLanes(t, rdb, show, fanClub, 3, 20000, true) // paused: ticks only read the lines
	openSale(t, rdb, show)
	club, general := users("club-", 500), users("gen-", 500)
	invite(t, rdb, show, "fanclub", club)
	fans := make([]string, 0, 1000)
	for i := range club {
		fans = append(fans, club[i], general[i])
	}
	joinTimed(t, svc, show, fans, 8, time.Second)
	time.Sleep(2 * waitroom.MarkEvery * time.Millisecond) // the last marks are in
	told := map[string]int64{}
	for i := 0; i < len(fans); i += 7 {
		if _, err := svc.Tick(context.Background(), show, false); err != nil {
			t.Fatal(err)
		}
		p, err := svc.Status(context.Background(), show, fans[i])
		if err != nil {
			t.Fatal(err)
		}
		told[fans[i]] = p.Position
	}
	configureLanes(t, rdb, show, fanClub, 3, 300)
	time.Sleep(1100 * time.Millisecond) // every replica's copy of the settings
	at := admitAll(t, svc, show, len(fans), 3*time.Millisecond)
	checkPositions(t, told, at, func(u string) string { l, _, _ := strings.Cut(u, "-"); return l })
}
