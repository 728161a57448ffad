package auth

import "time"

// SetCompare replaces the bcrypt comparison, so that tests can see which
// hashes are checked.
func (a *Authenticator) SetCompare(compare func(hash, password []byte) error) { a.compare = compare }

// CacheSize is the number of verified credentials remembered.
const CacheSize = cacheSize

// SetClock replaces the clock and the sleep that pads refusals.
func (a *Authenticator) SetClock(now func() time.Time, sleep func(time.Duration)) {
	a.now, a.sleep = now, sleep
}

// Floor is how long every refusal after a comparison lasts.
func (a *Authenticator) Floor() time.Duration { return a.floor }

// FailureBurst is the failed logins a client may make at once;
// VerifiedFor how long a verified credential is remembered.
const (
	FailureBurst = failureBurst
	VerifiedFor  = verifiedFor
)
