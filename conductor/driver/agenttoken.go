package driver

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"

	"github.com/ferricbm/ferric/pkg/model"
)

// NewAgentToken is a fresh agent token: 256 bits from the CSPRNG,
// URL-safe.
func NewAgentToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate agent token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// PreIssueAgentToken gives the node a fresh agent token to hand the ramdisk
// on a boot medium only the node reads (virtual media), as Ironic's
// add_secret_token(pregenerated=True) does: the token is already there when
// the ramdisk looks the node up, so lookup hands out only "******" and no
// one on the provisioning network can race the ramdisk for it. The caller
// saves the node before the medium can boot.
func PreIssueAgentToken(n *model.Node) (string, error) {
	token, err := NewAgentToken()
	if err != nil {
		return "", err
	}
	if n.DriverInternalInfo == nil {
		n.DriverInternalInfo = model.JSONObject{}
	}
	n.DriverInternalInfo["agent_secret_token"] = token
	n.DriverInternalInfo["agent_secret_token_pregenerated"] = true
	return token, nil
}
