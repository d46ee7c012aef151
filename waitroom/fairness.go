package waitroom

import (
	"bytes"
	"cmp"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"time"
)

// Recipe tells an auditor how to recompute the pre-opening order; it is served with the fairness record.
const Recipe = "seed = hex-decode(seed); check hex(SHA-256(seed)) == commitment; for each fan who joined before " +
	"saleStartsAt compute HMAC-SHA256(key=seed, message=userId); sort ascending by that MAC (bytes), ties by " +
	"userId; the i-th fan (from 1) gets ticket i (after any tickets handed out before the draw, normally none). participantsSha256 = hex(SHA-256(the userIds in that order joined by \"\\n\")). " +
	"Fans joining after opening get tickets N+1, N+2, ... in arrival order."

// Fairness is a show's published shuffle record: the commitment before opening, the seed after the draw.
type Fairness struct {
	Commitment         string    `json:"commitment"`
	Seed               string    `json:"seed,omitempty"`
	SaleStartsAt       time.Time `json:"saleStartsAt,omitzero"`
	Drawn              bool      `json:"drawn"`
	Participants       int64     `json:"participants"`
	ParticipantsSHA256 string    `json:"participantsSha256,omitempty"`
	Recipe             string    `json:"recipe"`
}

// NewSeed returns a fresh 32-byte seed, hex-encoded.
func NewSeed() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// Commit is the commitment published before opening: hex(SHA-256(seed bytes)).
func Commit(seed string) (string, error) {
	b, err := hex.DecodeString(seed)
	if err != nil || len(b) == 0 {
		return "", errors.New("waitroom: seed must be hex")
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Order returns users in the draw's order: ascending HMAC-SHA256(seed, userId), ties by userId. It depends only
// on the seed and the set of users, never on the order they arrived in, so arriving early or joining twice gains
// nothing. Duplicates are dropped.
func Order(seed string, users []string) ([]string, error) {
	key, err := hex.DecodeString(seed)
	if err != nil || len(key) == 0 {
		return nil, errors.New("waitroom: seed must be hex")
	}
	type keyed struct {
		head uint64 // the MAC's first 8 bytes, big-endian: compares like the bytes, cheaply
		mac  [sha256.Size]byte
		user string
	}
	ks := make([]keyed, 0, len(users))
	h := hmac.New(sha256.New, key)
	for _, u := range users {
		h.Reset()
		h.Write([]byte(u))
		var k keyed
		h.Sum(k.mac[:0])
		k.head, k.user = binary.BigEndian.Uint64(k.mac[:8]), u
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if a.head != b.head {
			return cmp.Compare(a.head, b.head)
		}
		if c := bytes.Compare(a.mac[:], b.mac[:]); c != 0 {
			return c
		}
		return strings.Compare(a.user, b.user)
	})
	out := make([]string, 0, len(ks))
	for i, k := range ks {
		if i > 0 && k.user == ks[i-1].user {
			continue
		}
		out = append(out, k.user)
	}
	return out, nil
}

// ParticipantsDigest is hex(SHA-256) of the ordered user ids joined by newlines, so an auditor holding the list
// can check it is the one that was drawn.
func ParticipantsDigest(ordered []string) string {
	h := sha256.New()
	for i, u := range ordered {
		if i > 0 {
			h.Write([]byte{'\n'})
		}
		h.Write([]byte(u))
	}
	return hex.EncodeToString(h.Sum(nil))
}
