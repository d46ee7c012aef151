package rediskey

// FanLane is the hash of the lanes the fans of showID are held to: field user, value the lane's name. A fan is
// held to the lane a bypass code put them in, else to the lane they first joined in: a fan waiting in one lane's
// line is never routed to another's (an invitation drawn after they joined would give them a second ticket
// there). It shares the hash tag of the fan's Invitation bucket, so the waiting room reads both of a fan's in
// one round trip to one master when it works out the fan's lane, and so their line.
func FanLane(showID, user string) string {
	return fanBucket(showID, user) + ":lane"
}
