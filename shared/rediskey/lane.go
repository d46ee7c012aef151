package rediskey

import "strconv"

// CodeLane is the hash of the fans of showID whom a bypass code put in a lane: field user, value the code's lane.
// It shares the hash tag of the fan's Invitation bucket, so the waiting room reads both of a fan's in one round
// trip to one master when it works out the fan's lane (and so their line).
func CodeLane(showID, user string) string {
	return "{show:" + showID + ":inv:" + strconv.Itoa(PartitionOf(user, InvitationBuckets)) + "}:coded"
}
