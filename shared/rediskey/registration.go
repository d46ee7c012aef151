package rediskey

// Registration is the hash holding user's registration for showID's sale, if any: field user, value "1". It
// shares Invitation's bucket and hash tag, so a fan's registration and invitation sit on one slot and a master
// that loses one loses both, with the bucket's copy marker (RegistrationCopied), field of this same hash: a
// bucket whose marker is gone is rebuilt from PostgreSQL before a join is refused on it (waitroom/registration.go).
func Registration(showID, user string) string {
	return RegistrationBucket(showID, PartitionOf(user, InvitationBuckets))
}

// RegistrationBucket is the i-th of showID's registration hashes (0 <= i < InvitationBuckets).
func RegistrationBucket(showID string, i int) string {
	return bucket(showID, i) + ":registered"
}

// RegistrationCopied is the field of each Registration hash saying the bucket's copy is whole: no user id can
// be it (ids are letters, digits and _-.:).
const RegistrationCopied = "!copied"
