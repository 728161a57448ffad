package task

import (
	"context"
	"fmt"

	"github.com/ferricbm/ferric/pkg/model"
)

// ConfigDrive is the node's instance_info configdrive as the deploy
// interface writes it: a URL or gzip+base64 text. A drive the API stored
// apart from the node row is read back here, only when a deploy needs it.
func (t *Task) ConfigDrive(ctx context.Context) (string, error) {
	value := t.node.InstanceInfo["configdrive"]
	if id, ok := model.StoredConfigDriveID(value); ok {
		cd, err := t.m.store.ConfigDrive(ctx, t.node.ID, id)
		if err != nil {
			return "", fmt.Errorf("load the config drive of node %s: %w", t.node.UUID, err)
		}
		return cd, nil
	}
	s, _ := value.(string)
	return s, nil
}
