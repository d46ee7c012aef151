package http_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/r3labs/sse/v2"

	"github.com/flashseat/flashseat/shared/token"
	"github.com/flashseat/flashseat/waitroom"
)

// TestTwoReplicas: fans stream from two edge replicas that both run admission ticks. Each fan is admitted
// exactly once, with a token any replica's JWKS verifies, whichever replica's tick admitted them.
func TestTwoReplicas(t *testing.T) {
	t.Parallel()
	k, err := token.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	is := token.NewIssuer(k)
	var mu sync.Mutex
	admittedBy := map[string]string{}
	observe := func(replica string) func(waitroom.TickResult, time.Duration, error) {
		return func(snap waitroom.TickResult, _ time.Duration, _ error) {
			mu.Lock()
			defer mu.Unlock()
			for _, g := range snap.Grants {
				admittedBy[g.UserID] = replica
			}
		}
	}
	a := newReplica(t, waitroom.Options{Tick: 60 * time.Millisecond, Observe: observe("a")}, is, nil)
	b := newReplica(t, waitroom.Options{Tick: 90 * time.Millisecond, Observe: observe("b")}, is, nil)
	show := a.show(t, 0.001, 1000)
	b.mu.Lock()
	b.shows = append(b.shows, show)
	b.mu.Unlock()
	const fans = 16
	for i := range fans {
		a.join(t, show, "r"+strconv.Itoa(i))
	}
	verifier := token.NewVerifier(is.JWKS().Ed25519Keys(), time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	jtis := map[string]string{}
	var wg sync.WaitGroup
	ready := make(chan struct{}, fans)
	for i := range fans {
		srv := a
		if i%2 == 1 {
			srv = b
		}
		user := "r" + strconv.Itoa(i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := true
			err := follow(ctx, srv.base+"/queue/"+show+"/events?access_token="+srv.user(t, user), func(ev *sse.Event) bool {
				if first && string(ev.Event) == "position" {
					first = false
					ready <- struct{}{}
				}
				if string(ev.Event) != "admitted" {
					return true
				}
				var st state
				_ = json.Unmarshal(ev.Data, &st)
				c, err := verifier.Verify(st.AdmissionToken, show, user)
				if err != nil {
					t.Errorf("%s's token: %v", user, err)
					return false
				}
				mu.Lock()
				if prev, dup := jtis[user]; dup {
					t.Errorf("%s admitted twice (%s, %s)", user, prev, c.ID)
				}
				jtis[user] = c.ID
				mu.Unlock()
				return false
			})
			if err != nil {
				t.Errorf("%s: %v", user, err)
			}
		}()
	}
	for range fans {
		<-ready
	}
	// Everyone is streaming: open the gate.
	a.do(t, "PUT", "/admin/v1/shows/"+show+"/queue", "Bearer "+adminToken, `{"admitPerSecond":8}`)
	wg.Wait()
	if len(jtis) != fans {
		t.Fatalf("%d of %d fans admitted", len(jtis), fans)
	}
	crossed := 0
	mu.Lock() // the replicas' ticks go on observing
	for i := range fans {
		streamedOn := map[bool]string{true: "b", false: "a"}[i%2 == 1]
		if admittedBy["r"+strconv.Itoa(i)] != streamedOn {
			crossed++
		}
	}
	mu.Unlock()
	if crossed == 0 {
		t.Fatal("every fan was admitted by the replica it streamed from: the test proved nothing")
	}
	t.Logf("%d of %d fans were admitted by the other replica", crossed, fans)
	seen := map[string]bool{}
	for _, j := range jtis {
		if seen[j] {
			t.Fatalf("jti %s granted twice", j)
		}
		seen[j] = true
	}
}
