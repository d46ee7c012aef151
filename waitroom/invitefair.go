package waitroom

import (
	"bytes"
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"slices"
)

// The invitation draw's fairness: a wave invites the count eligible fans whose HMAC-SHA256 under the wave's seed
// is smallest. The seed is committed before the draw and revealed after; the eligible fans are published as
// hashes (FanHash), never as user ids; so anyone can recompute the wave from the published material alone
// (WaveRecipe, docs/FAIRNESS.md), and each fan can find their own hash in it. Taking the smallest MACs of a
// keyed pseudorandom function is a uniformly random subset, and it depends only on the seed and the set of fans,
// not on when they registered.

// WaveRecipe tells an auditor how to recompute a wave; it is served with the waves.
const WaveRecipe = "seed = hex-decode(seed); check hex(SHA-256(seed)) == commitment; eligible = the wave's list " +
	"(GET /queue/{showId}/waves/{waveId}/eligible: one hex fanHash a line, ascending), where fanHash = " +
	"hex(SHA-256(\"flashseat registration v1\" 0x00 showId 0x00 userId)); check eligibleSha256 == " +
	"hex(SHA-256(the list's lines joined by \"\\n\")); for each fanHash compute HMAC-SHA256(key=seed, " +
	"message=hex-decode(fanHash)); sort ascending by that MAC (bytes), ties by fanHash; the first min(count, " +
	"eligible) are invited; invitedSha256 = hex(SHA-256(their fanHashes in that order joined by \"\\n\"))."

// FanHash is user's published hash in show's waves.
func FanHash(show, user string) [32]byte {
	return sha256.Sum256([]byte("flashseat registration v1\x00" + show + "\x00" + user))
}

// DrawWave returns the indexes into eligible of the count fans the seed invites, in the draw's order. It keeps a
// MAC's first 8 bytes per fan (16 bytes with its index), so 3,000,000 fans cost some 48 MB, and compares whole
// MACs only on the rare tie of those bytes.
func DrawWave(seed string, eligible []Eligible, count int) ([]int, error) {
	key, err := hex.DecodeString(seed)
	if err != nil || len(key) == 0 {
		return nil, errors.New("waitroom: seed must be hex")
	}
	if count <= 0 {
		return nil, nil
	}
	type keyed struct {
		head uint64
		i    int
	}
	ks := make([]keyed, len(eligible))
	h := hmac.New(sha256.New, key)
	var mac [sha256.Size]byte
	for i := range eligible {
		h.Reset()
		h.Write(eligible[i].Hash[:])
		h.Sum(mac[:0])
		ks[i] = keyed{head: binary.BigEndian.Uint64(mac[:8]), i: i}
	}
	full := func(i int) []byte {
		h.Reset()
		h.Write(eligible[i].Hash[:])
		return h.Sum(nil)
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if a.head != b.head {
			return cmp.Compare(a.head, b.head)
		}
		if c := bytes.Compare(full(a.i), full(b.i)); c != 0 {
			return c
		}
		return bytes.Compare(eligible[a.i].Hash[:], eligible[b.i].Hash[:])
	})
	out := make([]int, min(count, len(ks)))
	for j := range out {
		out[j] = ks[j].i
	}
	return out, nil
}

// HashesDigest is hex(SHA-256) of the hashes' hex forms joined by newlines, in the order given: a wave's
// eligibleSha256 (ascending) and invitedSha256 (the draw's order).
func HashesDigest(hs [][32]byte) string {
	d := sha256.New()
	var buf [64]byte
	for i, x := range hs {
		if i > 0 {
			d.Write([]byte{'\n'})
		}
		hex.Encode(buf[:], x[:])
		d.Write(buf[:])
	}
	return hex.EncodeToString(d.Sum(nil))
}
