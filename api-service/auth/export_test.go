package auth

// SetCompare replaces the bcrypt comparison, so that tests can see which
// hashes are checked.
func (a *Authenticator) SetCompare(compare func(hash, password []byte) error) { a.compare = compare }

// CacheSize is the number of verified credentials remembered.
const CacheSize = cacheSize
