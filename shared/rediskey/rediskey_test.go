package rediskey

import (
	"strings"
	"testing"
)

// slot is Redis Cluster's key slot: CRC16 (XMODEM) of the hash tag when the key has one, modulo 16384.
func slot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

// Every key of a show must live in one cluster slot, or a Lua script over them fails on Redis Cluster.
func TestShowKeysShareOneSlot(t *testing.T) {
	t.Parallel()
	if got := slot("123456789"); got != 0x31C3%16384 {
		t.Fatalf("crc16 self-check: got %#x", got)
	}
	for _, show := range []string{"sh_1", "sh_ce9197a4d849b6a6da986157c04103bb", "x"} {
		keys := []string{Seat(show, "A1"), Seat(show, "J20"), Fence(show), Epoch(show), ShowInfo(show),
			QueueConfig(show), QueueActive(show), QueueRevoked(show), AutotuneLease(show), Tag(show) + ":anything"}
		want := slot(keys[0])
		for _, k := range keys {
			if !strings.HasPrefix(k, Tag(show)) {
				t.Errorf("%s does not start with the show's tag", k)
			}
			if got := slot(k); got != want {
				t.Errorf("%s is in slot %d, want %d like %s", k, got, want, keys[0])
			}
		}
	}
	if slot(Seat("a", "A1")) == slot(Seat("b", "A1")) && slot(Seat("c", "A1")) == slot(Seat("d", "A1")) {
		t.Error("different shows should spread over slots")
	}
}
