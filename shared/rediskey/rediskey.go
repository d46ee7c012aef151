// Package rediskey is the Redis key scheme edge, waitroom and booking agree on.
//
// Every key that belongs to a show carries the hash tag {show:ID}, so all of one show's keys hash to one Redis
// Cluster slot: a Lua script may then touch any of them atomically, and the same code runs on a single Redis and on
// a cluster. No script may touch two shows' keys.
package rediskey

// Tag is the hash tag that pins a show's keys to one cluster slot.
func Tag(showID string) string { return "{show:" + showID + "}" }

// Seat is the hold lock of one seat: a string "bookingID|fence" with a PX expiry equal to the hold's TTL. A seat
// with no key is free or sold; sold seats are known from ShowInfo and Postgres, never from a lock.
func Seat(showID, seatID string) string { return Tag(showID) + ":seat:" + seatID }

// Fence is the per-show counter behind fencing tokens; Epoch is the Postgres-issued generation it is paired with,
// so that a Redis that lost its data (restart without persistence, failover) never hands out a smaller token.
func Fence(showID string) string { return Tag(showID) + ":fence" }

// Epoch holds the current fencing epoch of a show (see Fence).
func Epoch(showID string) string { return Tag(showID) + ":epoch" }

// ShowInfo is a hash booking publishes for the waiting room and the edge: the fields below. Booking rewrites it
// on every change of availability and at each reconcile, so it comes back after Redis loses its data.
func ShowInfo(showID string) string { return Tag(showID) + ":info" }

// Fields of ShowInfo. Times are Unix milliseconds.
const (
	InfoSaleStartsAt = "saleStartsAt"
	InfoStartsAt     = "startsAt"
	InfoTotalSeats   = "totalSeats"
	InfoAvailable    = "available" // neither held nor sold
	InfoHeld         = "held"      // under a live hold
	InfoBooked       = "booked"    // sold
	InfoUpdatedAt    = "updatedAt"
	InfoClosed       = "closed" // "1" once an operator closed the sale: joins answer closed, nobody is admitted
)

// ShowEvents is the channel on which booking publishes a show id when an operator changed the show's definition
// (sale opening, close), so every booking replica drops its cached copy within a second.
const ShowEvents = "flashseat:show-changed"

// SeatEvents is the pub/sub channel on which booking publishes {"seatId","status"} for every seat change of a show.
func SeatEvents(showID string) string { return Tag(showID) + ":seat-events" }

// AvailabilityEvents is the channel on which booking publishes a show id whenever ShowInfo's counts change, so
// the waiting room can react to sell-out and to seats coming back without polling every show.
const AvailabilityEvents = "flashseat:availability"

// QueueConfig is a hash of the operator's settings for a show's waiting room: the fields below. A show whose
// queue was never set has its record's answer cached here too (off, version 0), on the show's own key so that a
// cluster failover loses it only together with the rest of the show's state.
func QueueConfig(showID string) string { return Tag(showID) + ":queue:config" }

// Fields of QueueConfig.
const (
	QueueEnabled         = "enabled"         // "1" or "0"
	QueueAdmitPerSecond  = "admitPerSecond"  // decimal
	QueueMaxActive       = "maxActive"       // integer
	QueueTokenTTLSeconds = "tokenTtlSeconds" // integer
	QueuePaused          = "paused"          // "1" or "0": admission paused, queue still on
	QueueTurnHold        = "turnHold"        // integer seconds: how long an absent fan's turn is held
	QueueBot             = "bot"             // JSON: the show's bot protection (admission.BotProtection)
	QueuePage            = "page"            // JSON: the queue page's message and language (admission.Page)
	QueueVersion         = "version"         // the record's version of these settings (PostgreSQL); 0: no record, off
	QueueMode            = "mode"            // "off", "always" or "threshold"; absent: "enabled" decides
	QueueTuning          = "tuning"          // JSON: thresholds and autotune (admission.Tuning)
	// The threshold mode's limits again, as plain numbers for the join and admission scripts.
	QueueActiveThreshold  = "activeThreshold"  // integer: live admissions that engage the queue
	QueueArrivalThreshold = "arrivalThreshold" // integer: arrivals a minute that engage it (0: never)
	QueueCooldown         = "cooldown"         // integer seconds the figures stay under before it disengages
	// QueuePartitions is how many partitions (lines) the show's queue is split over (partition.go); absent: 1.
	// With lanes, it counts every lane's partitions: lanes times partitions lines.
	QueuePartitions = "partitions"
	// QueueLanes is the show's lanes and their shares, "name:share,..." (admission.Lanes.String); absent: none.
	QueueLanes = "lanes"
)

// QueueSynced is the mark that every show on record (PostgreSQL) was put in the cache since Redis last lost its
// data: its absence sends every replica's keeper to rebuild them all. It vouches for no single show (on a
// cluster it lives on another master than the show's keys), so a show without settings is always asked of the
// record, never read as "queue off".
const QueueSynced = "flashseat:queue:synced"

// QueueConfigEvents is the channel on which a changed QueueConfig's show id is published, so every replica applies
// an operator's change within a second.
const QueueConfigEvents = "flashseat:queue-config"

// QueueActive is a sorted set of the admission grants holding an active slot: member jti, score the grant's expiry
// in Unix milliseconds. Booking removes a grant when the admitted fan's booking is confirmed or cancelled.
func QueueActive(showID string) string { return Tag(showID) + ":queue:active" }

// QueueRevoked is a sorted set of revoked admission token ids: member jti, score its expiry in Unix milliseconds
// (after which the token is refused anyway and the member may be trimmed). Edge and booking refuse a revoked jti.
func QueueRevoked(showID string) string { return Tag(showID) + ":queue:revoked" }

// AutotuneLease is the string one edge replica holds (SET NX with an expiry of two autotune rounds, renewed while
// it runs) to be the only one that tunes a show's admission rate: its value is the holder's replica id.
func AutotuneLease(showID string) string { return Tag(showID) + ":autotune:lease" }
