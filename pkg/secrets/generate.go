package secrets

import (
	"crypto/rand"
	"fmt"
	"math/big"
)

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// Generate is n alphanumerics from the CSPRNG: deploy keys, CHAP accounts
// and secrets, which travel in kernel command lines, tgtadm arguments and
// iSCSI text keys where only plain characters are safe.
func Generate(n int) (string, error) {
	b := make([]byte, n)
	limit := big.NewInt(int64(len(alphabet)))
	for i := range b {
		x, err := rand.Int(rand.Reader, limit)
		if err != nil {
			return "", fmt.Errorf("generate a secret: %w", err)
		}
		b[i] = alphabet[x.Int64()]
	}
	return string(b), nil
}
