package booking_test

import (
	"os"
	"testing"

	"github.com/flashseat/flashseat/shared/infra/redistest"
	"github.com/flashseat/flashseat/shared/infra/testparallel"
)

// clusterTests are the tests that also run on a Redis Cluster: the ones whose outcome rests on the Lua scripts and
// the fence (holds racing each other, their expiry and owners, the saga over a lost lock). The rest of the package
// is about PostgreSQL and the gateway, and runs on the single Redis only.
const clusterTests = "^Test(ThousandFansOneSeat|OverlappingHolds|Expiry|StaleOwnerRelease|LedgerAfterRedisLoss|" +
	"TwoReplicas|FenceRollback|CancelRacesExpiry|CrowdOnFreeSeatClaimsOnce|CrowdOnStaleSnapshot|PayConfirms|" +
	"PayRacingCancel|PayRacingHoldExpiry|PayRedisLostBetweenAuthorizeAndConfirm|PayChaos|" +
	"ReconcileReleasesOrphanLocks|ReconcileOrphanReleaseIsFenced)$"

// The tests wait on PostgreSQL, Redis, expiries and the gateway far more than they compute: eight at once.
func TestMain(m *testing.M) {
	testparallel.AtLeast(8)
	os.Exit(redistest.RunEachOf(m, clusterTests))
}
