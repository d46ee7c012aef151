// Package tickettest helps tests play a forger against ticket codes: the private keys one could make of public
// bytes (a gate kit's keys, a code seen at the door), to show that none of them makes a code that verifies.
package tickettest

import (
	"crypto/ed25519"
	"crypto/sha256"
)

// KeysFrom is every Ed25519 private key a forger could make of b: b as a seed (its first 32 bytes), b as a
// whole private key, and b's SHA-256 as a seed.
func KeysFrom(b []byte) []ed25519.PrivateKey {
	sum := sha256.Sum256(b)
	keys := []ed25519.PrivateKey{ed25519.NewKeyFromSeed(sum[:])}
	if len(b) >= ed25519.SeedSize {
		keys = append(keys, ed25519.NewKeyFromSeed(b[:ed25519.SeedSize]))
	}
	if len(b) == ed25519.PrivateKeySize {
		keys = append(keys, ed25519.PrivateKey(b))
	}
	return keys
}
