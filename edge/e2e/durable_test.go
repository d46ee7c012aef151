package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/flashseat/flashseat/shared/admission"
	"github.com/flashseat/flashseat/shared/rediskey"
	wrredis "github.com/flashseat/flashseat/waitroom/redis"
)

// TestQueueSurvivesRedisLoss: an operator switches a show's queue on; then Redis loses every key of the show.
// A hold without admission is still refused, at the edge and at booking (never read as "queue off"), the queue's
// state comes back by itself, and a fan who re-joins with the place receipt has the same position.
func TestQueueSurvivesRedisLoss(t *testing.T) {
	t.Parallel()
	const adminToken = "adm_e2e_e2e_e2e_e2e_e2e" // booking's, given to the edge too
	p := start(t, map[string]string{"ADMIN_TOKEN": adminToken})
	ctx := context.Background()
	admin := map[string]string{"Authorization": "Bearer " + adminToken, "Content-Type": "application/json"}
	if status, b := send(t, "PUT", p.edge+"/admin/v1/shows/"+p.show+"/queue",
		`{"enabled":true,"admitPerSecond":0.001,"maxActive":100,"tokenTtlSeconds":600}`, admin); status != 200 {
		t.Fatalf("queue on: %d %s", status, b)
	}
	join := func(tok, receipt string) (position int64, rec string) {
		t.Helper()
		hdr := map[string]string{"Authorization": "Bearer " + tok, "Accept": "application/json"}
		if receipt != "" {
			hdr[admission.PlaceHeader] = receipt
		}
		status, b := send(t, "POST", p.edge+"/queue/"+p.show+"/join", "", hdr)
		if proof, ok := solve(t, status, b); ok { // a new place: the show's bot protection asks a proof of work
			status, b = send(t, "POST", p.edge+"/queue/"+p.show+"/join", `{"proof":"`+proof+`"}`, hdr)
		}
		var st struct {
			Status   string
			Position int64
			Receipt  string
		}
		if status != 200 || json.Unmarshal(b, &st) != nil || st.Status != "waiting" || st.Receipt == "" {
			t.Fatalf("join: %d %s", status, b)
		}
		return st.Position, st.Receipt
	}
	var toks, receipts []string
	var positions []int64
	for range 3 {
		_, tok := guest(t, p)
		pos, rec := join(tok, "")
		toks, receipts, positions = append(toks, tok), append(receipts, rec), append(positions, pos)
	}

	keys := append(wrredis.Keys(p.show), rediskey.QueueConfig(p.show), rediskey.QueueActive(p.show),
		rediskey.QueueRevoked(p.show))
	if err := p.rdb.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
	// Past the gates' one-second memory of "on", and well before the keepers' periodic re-check.
	time.Sleep(1100 * time.Millisecond)

	_, tok := guest(t, p)
	hold := fmt.Sprintf(`{"showId":%q,"seatIds":["A1"]}`, p.show)
	auth := map[string]string{"Authorization": "Bearer " + tok, "Accept": "application/json"}
	if status, b := send(t, "POST", p.booking+"/api/v1/bookings/hold", hold, auth); status != 403 {
		t.Fatalf("hold at booking after the loss: %d %s, want 403", status, b)
	}
	p.rdb.Del(ctx, keys...)
	time.Sleep(1100 * time.Millisecond)
	if status, b := send(t, "POST", p.edge+"/api/v1/bookings/hold", hold, auth); status != 403 {
		t.Fatalf("hold at the edge after the loss: %d %s, want 403", status, b)
	}
	if on, _ := p.rdb.HGet(ctx, rediskey.QueueConfig(p.show), rediskey.QueueEnabled).Result(); on != "1" {
		t.Fatalf("queue settings not back in Redis: enabled=%q", on)
	}

	p.rdb.Del(ctx, keys...)
	for i, tok := range toks {
		if pos, _ := join(tok, receipts[i]); pos != positions[i] {
			t.Fatalf("fan %d re-joined with the receipt at position %d, want %d", i, pos, positions[i])
		}
	}
	_, late := guest(t, p)
	if pos, _ := join(late, ""); pos <= positions[len(positions)-1] {
		t.Fatalf("a fan joining after the rebuild is at %d, ahead of a receipt holder", pos)
	}
}
