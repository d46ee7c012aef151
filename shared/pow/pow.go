// Package pow is the waiting room's proof of work, in the open ALTCHA protocol: the server picks a secret number
// n in [0, maxnumber], publishes challenge = hex(SHA-256(salt + n)) with an HMAC-SHA256 signature of it, and the
// client finds n by trying 0, 1, 2, ... A solution is the JSON {algorithm, challenge, number, salt, signature,
// took}, base64-encoded, which any ALTCHA widget or library produces.
//
// Why this protocol: the work is bounded (at most maxnumber + 1 hashes, maxnumber/2 on average), so an honest
// fan's wait has a known worst case, unlike a leading-zero-bits puzzle whose tail is unbounded; verifying costs
// one SHA-256 and one HMAC (about a microsecond), so a flood of forged solutions costs the server nothing; and
// it is documented and open, so a native app can use an existing ALTCHA library or the twenty lines of Solve.
//
// The salt carries the challenge's terms as ALTCHA's salt parameters (expires=...), which the signature covers
// because the challenge hashes the salt: the scope it is good for (a show's queue, or minting a guest identity),
// the identity it is bound to, when it was issued and its difficulty. Spending a challenge once is the caller's
// part: Solution.ID names it.
package pow

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"math/big"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Algorithm is the only hash this package speaks (ALTCHA's default).
const Algorithm = "SHA-256"

// Errors of Verify; callers compare with errors.Is.
var (
	ErrMalformed     = errors.New("pow: malformed solution")                       // not base64 JSON of the protocol
	ErrForged        = errors.New("pow: solution does not match its challenge")    // wrong number or signature
	ErrExpired       = errors.New("pow: challenge expired")                        // past its expires
	ErrWrongScope    = errors.New("pow: challenge is for another queue")           // another show, or not a join
	ErrWrongIdentity = errors.New("pow: challenge was issued to another identity") // another user
)

// Challenge is what a client is given to solve: ALTCHA's fields, plus expiresAt for people reading it.
type Challenge struct {
	Algorithm string    `json:"algorithm"`
	Challenge string    `json:"challenge"`
	MaxNumber int64     `json:"maxnumber"`
	Salt      string    `json:"salt"`
	Signature string    `json:"signature"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// Terms are what a challenge is issued for.
type Terms struct {
	Scope     string // what the solution may be spent on: "show:{id}" or "guest"
	Identity  string // the user it is bound to; empty for none (minting an identity)
	MaxNumber int64  // difficulty: the expected work is MaxNumber/2 hashes
	TTL       time.Duration
}

// Solution is a verified solution's terms. ID (the challenge hash) names it for spending it once.
type Solution struct {
	ID        string
	Scope     string
	MaxNumber int64
	IssuedAt  time.Time
	ExpiresAt time.Time
	Took      time.Duration // what the client says solving took (informational; it cannot be checked)
}

// Issuer makes and verifies challenges under one HMAC key, which every replica shares.
type Issuer struct {
	macs sync.Pool // of hash.Hash: HMAC-SHA256 keyed; keying one costs two hash blocks
}

// NewIssuer returns an issuer keyed with secret (at least 32 bytes, from a key every replica shares).
func NewIssuer(secret []byte) (*Issuer, error) {
	if len(secret) < 32 {
		return nil, errors.New("pow: the secret must be at least 32 bytes")
	}
	key := append([]byte(nil), secret...)
	return &Issuer{macs: sync.Pool{New: func() any { return &mac{h: hmac.New(sha256.New, key)} }}}, nil
}

func (is *Issuer) sign(challenge string) string {
	m := is.macs.Get().(*mac)
	defer is.macs.Put(m)
	m.h.Reset()
	m.h.Write([]byte(challenge))
	return hex.EncodeToString(m.h.Sum(m.out[:0]))
}

// Issue makes a challenge on t's terms at now.
func (is *Issuer) Issue(t Terms, now time.Time) (Challenge, error) {
	if t.MaxNumber < 1 {
		t.MaxNumber = 1
	}
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return Challenge{}, fmt.Errorf("pow: nonce: %w", err)
	}
	n, err := rand.Int(rand.Reader, big.NewInt(t.MaxNumber+1))
	if err != nil {
		return Challenge{}, fmt.Errorf("pow: number: %w", err)
	}
	exp := now.Add(t.TTL)
	q := url.Values{}
	q.Set("expires", strconv.FormatInt(exp.Unix(), 10))
	q.Set("scope", t.Scope)
	if t.Identity != "" {
		q.Set("sub", identityTag(t.Identity))
	}
	q.Set("iat", strconv.FormatInt(now.UnixMilli(), 10))
	q.Set("d", strconv.FormatInt(t.MaxNumber, 10))
	salt := hex.EncodeToString(nonce[:]) + "?" + q.Encode() + "&"
	sum := sha256.Sum256([]byte(salt + strconv.FormatInt(n.Int64(), 10)))
	ch := hex.EncodeToString(sum[:])
	return Challenge{Algorithm: Algorithm, Challenge: ch, MaxNumber: t.MaxNumber, Salt: salt,
		Signature: is.sign(ch), ExpiresAt: time.Unix(exp.Unix(), 0).UTC()}, nil
}

// identityTag binds a challenge to a user without writing the user id into it: the first 16 bytes of its
// SHA-256 are plenty to tell one identity from another, and the signature makes them unforgeable.
func identityTag(user string) string {
	return base64.RawURLEncoding.EncodeToString(identitySum(user))
}

func identitySum(user string) []byte {
	var b [128]byte
	sum := sha256.Sum256(append(append(b[:0], "flashseat pow identity\x00"...), user...))
	return sum[:16]
}

// payload is a solution on the wire.
type payload struct {
	Algorithm string `json:"algorithm"`
	Challenge string `json:"challenge"`
	Number    int64  `json:"number"`
	Salt      string `json:"salt"`
	Signature string `json:"signature"`
	Took      int64  `json:"took,omitempty"`
}

// Encode returns the solution payload for c solved with number, as an ALTCHA client sends it.
func Encode(c Challenge, number int64, took time.Duration) string {
	b, _ := json.Marshal(payload{Algorithm: c.Algorithm, Challenge: c.Challenge, Number: number, Salt: c.Salt,
		Signature: c.Signature, Took: took.Milliseconds()}) // a struct of strings and ints always marshals
	return base64.StdEncoding.EncodeToString(b)
}

// MaxPayload bounds a solution's size; a real one is about 400 bytes.
const MaxPayload = 2048

// Verify checks a solution for scope and identity at now: the number solves the challenge, the signature is
// ours, the challenge is unexpired and was issued for this scope and identity. Spending it once is the caller's.
// Only the returned ID allocates: a crowd's every join passes here.
func (is *Issuer) Verify(raw, scope, identity string, now time.Time) (Solution, error) {
	if len(raw) == 0 || len(raw) > MaxPayload {
		return Solution{}, ErrMalformed
	}
	var in [MaxPayload]byte
	var out, scratch [MaxPayload / 4 * 3]byte
	src := in[:copy(in[:], raw)]
	n, err := base64.StdEncoding.Decode(out[:], src)
	if err != nil {
		if n, err = base64.RawURLEncoding.Decode(out[:], src); err != nil { // some clients send URL-safe base64
			return Solution{}, ErrMalformed
		}
	}
	p, ok := read(out[:n], scratch[:0])
	if !ok || string(p.algorithm) != Algorithm || len(p.challenge) != 2*sha256.Size ||
		len(p.signature) != 2*sha256.Size || p.number < 0 {
		return Solution{}, ErrMalformed
	}
	// The signature first: it is one HMAC, and without it nothing else in the payload can be believed.
	var sig, ch [sha256.Size]byte
	if _, err := hex.Decode(sig[:], p.signature); err != nil || !is.signed(p.challenge, &sig) {
		return Solution{}, ErrForged
	}
	var tail [MaxPayload + 20]byte
	sum := sha256.Sum256(strconv.AppendInt(append(tail[:0], p.salt...), p.number, 10))
	if _, err := hex.Decode(ch[:], p.challenge); err != nil || sum != ch {
		return Solution{}, ErrForged
	}
	// The salt is ours (the challenge is signed and hashes it), so its query is as Issue wrote it.
	var exp, iat, d int64
	var gotScope, sub []byte
	_, query, _ := bytes.Cut(p.salt, []byte("?"))
	for len(query) > 0 {
		var pair []byte
		pair, query, _ = bytes.Cut(query, []byte("&"))
		k, v, _ := bytes.Cut(pair, []byte("="))
		var ok = true
		switch string(k) {
		case "expires":
			exp, ok = digits(v)
		case "iat":
			iat, ok = digits(v)
		case "d":
			d, ok = digits(v)
		case "scope":
			gotScope = v
		case "sub":
			sub = v
		}
		if !ok {
			return Solution{}, ErrMalformed
		}
	}
	if exp == 0 || iat == 0 || d == 0 {
		return Solution{}, ErrMalformed
	}
	s := Solution{ID: strings.ToLower(string(p.challenge)), Scope: scope, MaxNumber: d,
		IssuedAt: time.UnixMilli(iat), ExpiresAt: time.Unix(exp, 0), Took: time.Duration(p.took) * time.Millisecond}
	if !queryIs(gotScope, scope) {
		s.Scope, _ = url.QueryUnescape(string(gotScope))
	}
	switch {
	case !now.Before(s.ExpiresAt):
		return s, ErrExpired
	case s.Scope != scope:
		return s, ErrWrongScope
	case !subIs(sub, identity):
		return s, ErrWrongIdentity
	}
	return s, nil
}

// signed reports whether sig is our HMAC of challenge. The challenge is copied into the pooled MAC's own buffer:
// a slice handed to the hash's interface would move the caller's stack buffers to the heap.
func (is *Issuer) signed(challenge []byte, sig *[sha256.Size]byte) bool {
	m := is.macs.Get().(*mac)
	defer is.macs.Put(m)
	m.h.Reset()
	m.h.Write(m.in[:copy(m.in[:], challenge)])
	return hmac.Equal(m.h.Sum(m.out[:0]), sig[:])
}

// mac is a keyed HMAC with buffers of its own, pooled: keying one costs two hash blocks.
type mac struct {
	h   hash.Hash
	in  [2 * sha256.Size]byte
	out [sha256.Size]byte
}

// digits reads a decimal of at most 18 digits.
func digits(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// queryIs reports whether esc, a query value as url.Values.Encode writes it, is want.
func queryIs(esc []byte, want string) bool {
	j := 0
	for i := 0; i < len(esc); i++ {
		c := esc[i]
		switch c {
		case '+':
			c = ' '
		case '%':
			if i+2 >= len(esc) {
				return false
			}
			v, ok := hex4([]byte{'0', '0', esc[i+1], esc[i+2]})
			if !ok {
				return false
			}
			c, i = byte(v), i+2
		}
		if j >= len(want) || want[j] != c {
			return false
		}
		j++
	}
	return j == len(want)
}

// subIs reports whether sub is identity's tag (identityTag), or both are empty.
func subIs(sub []byte, identity string) bool {
	if identity == "" {
		return len(sub) == 0
	}
	var tag [22]byte // base64 of 16 bytes, unpadded
	base64.RawURLEncoding.Encode(tag[:], identitySum(identity))
	return string(sub) == string(tag[:])
}

// ShowScope is the scope of a join to show's queue.
func ShowScope(show string) string { return "show:" + show }

// GuestScope is the scope of minting a guest identity.
const GuestScope = "guest"

// Solve finds c's number with workers goroutines (at least 1), as fast as this machine can: the hash of the
// salt's whole 64-byte blocks is computed once and each try hashes only the tail. It gives up when stop is
// closed (nil: never) or the range is exhausted (a challenge that is not ours, or corrupted).
func Solve(c Challenge, workers int, stop <-chan struct{}) (int64, bool) {
	target, err := hex.DecodeString(c.Challenge)
	if err != nil || len(target) != sha256.Size || c.Algorithm != Algorithm {
		return 0, false
	}
	if workers < 1 {
		workers = 1
	}
	mid := sha256.New()
	whole := len(c.Salt) / 64 * 64
	mid.Write([]byte(c.Salt[:whole]))
	state, _ := mid.(interface{ MarshalBinary() ([]byte, error) }).MarshalBinary() // sha256's digest always can
	tail := c.Salt[whole:]
	found := make(chan int64, workers)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(start int64) {
			defer wg.Done()
			h := sha256.New()
			u := h.(interface{ UnmarshalBinary([]byte) error })
			buf := make([]byte, 0, 64+20)
			var sum [sha256.Size]byte
			for i, n := 0, start; n <= c.MaxNumber; i, n = i+1, n+int64(workers) {
				if i&0xfff == 0 {
					select {
					case <-done:
						return
					case <-stop:
						return
					default:
					}
				}
				_ = u.UnmarshalBinary(state)
				h.Write(strconv.AppendInt(append(buf[:0], tail...), n, 10))
				if string(h.Sum(sum[:0])) == string(target) {
					found <- n
					return
				}
			}
		}(int64(w))
	}
	go func() { wg.Wait(); close(found) }()
	n, ok := <-found
	close(done)
	return n, ok
}
