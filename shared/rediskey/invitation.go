package rediskey

import "strconv"

// InvitationBuckets is how many hashes a show's invitations are spread over: a wave invites up to millions of
// fans, and one hash would put all of them on one master.
const InvitationBuckets = 16

// Invitation is the hash holding user's invitation to showID's sale, if any: field user, value the lane the
// invitation names ("" the show's general lane). The invitation's record is PostgreSQL's; this is the copy the
// waiting room reads at each join. The buckets do not follow the queue's partitions, which an operator may change
// after a wave is drawn.
func Invitation(showID, user string) string { return fanBucket(showID, user) + ":invited" }

// fanBucket is the hash tag of user's bucket among showID's InvitationBuckets: their invitation, registration
// and lane hashes share it, so one script reads them on one slot.
func fanBucket(showID, user string) string {
	return bucket(showID, PartitionOf(user, InvitationBuckets))
}

// bucket is the hash tag of showID's i-th bucket.
func bucket(showID string, i int) string { return "{show:" + showID + ":inv:" + strconv.Itoa(i) + "}" }
