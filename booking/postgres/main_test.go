package postgres_test

import (
	"testing"

	"github.com/flashseat/flashseat/shared/infra/testparallel"
)

// The tests wait on PostgreSQL far more than they compute (and on standbys catching up): eight at once.
func TestMain(m *testing.M) { testparallel.Main(m, 8) }
