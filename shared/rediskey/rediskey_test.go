package rediskey

import (
	"strings"
	"testing"
)

// Every key of a show must live in one cluster slot, or a Lua script over them fails on Redis Cluster.
func TestShowKeysShareOneSlot(t *testing.T) {
	t.Parallel()
	if got := Slot("123456789"); got != 0x31C3%16384 {
		t.Fatalf("crc16 self-check: got %#x", got)
	}
	for _, show := range []string{"sh_1", "sh_ce9197a4d849b6a6da986157c04103bb", "x"} {
		keys := []string{Seat(show, "A1"), Seat(show, "J20"), Fence(show), Epoch(show), ShowInfo(show),
			QueueConfig(show), QueueActive(show), QueueRevoked(show), AutotuneLease(show), Tag(show) + ":anything"}
		want := Slot(keys[0])
		for _, k := range keys {
			if !strings.HasPrefix(k, Tag(show)) {
				t.Errorf("%s does not start with the show's tag", k)
			}
			if got := Slot(k); got != want {
				t.Errorf("%s is in slot %d, want %d like %s", k, got, want, keys[0])
			}
		}
	}
	if Slot(Seat("a", "A1")) == Slot(Seat("b", "A1")) && Slot(Seat("c", "A1")) == Slot(Seat("d", "A1")) {
		t.Error("different shows should spread over slots")
	}
}

// A show's invitations spread over buckets, each fan's always in the same one.
func TestInvitationsSpread(t *testing.T) {
	t.Parallel()
	slots := map[uint16]bool{}
	for i := range 2000 {
		u := "fan" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + strings.Repeat("y", i/26)
		if Invitation("sh_1", u) != Invitation("sh_1", u) {
			t.Fatal("a fan's bucket moved")
		}
		slots[Slot(Invitation("sh_1", u))] = true
	}
	if len(slots) != InvitationBuckets {
		t.Errorf("2,000 fans' invitations are in %d slots, want %d", len(slots), InvitationBuckets)
	}
}
