package ilo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ferricbm/ferric/conductor/vmedia/publish"
	"github.com/ferricbm/ferric/deploy/image"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

// deployISOName is the object a node's deploy ISO taken from Glance is
// published as.
func deployISOName(nodeUUID string) string { return "deploy-" + nodeUUID }

// conductorMedia tells whether a Swift object name is one the conductor
// publishes for a node in the container: a node's parameter floppy holds its
// agent token, and any of them booted elsewhere would hand one node's
// identity to another.
func conductorMedia(object string) bool {
	for _, prefix := range []string{publish.FloppyName(""), publish.BootISOName(""), deployISOName("")} {
		if strings.HasPrefix(object, prefix) {
			return true
		}
	}
	return false
}

// swiftPrefix starts a deploy_iso naming an object of the conductor's
// Swift container ([ilo] swift_ilo_container), as Ironic's references do.
const swiftPrefix = "swift:"

// deployISOURL is where the BMC fetches the deploy ISO: deploy_iso itself
// when it is a URL; a temporary URL of the object for swift:<object>; for
// a Glance image id, the image read through the Image API, checked
// against Glance's hash, and published for the node, for the media
// lifetime, behind a temporary URL (the BMC has no Glance credentials).
func (b *Boot) deployISOURL(ctx context.Context, n *model.Node, pub publish.Publisher) (string, error) {
	ref, err := b.deployISO(n)
	if err != nil {
		return "", err
	}
	if object, ok := strings.CutPrefix(ref, swiftPrefix); ok {
		return swiftDeployISOURL(ctx, n, pub, object, b.opts.MediaLifetime)
	}
	id, ok := image.GlanceRef(ref)
	if !ok {
		return ref, nil
	}
	g, err := b.opts.Glance()
	if err != nil {
		return "", fmt.Errorf("node %s: deploy ISO %s: %w", n.UUID, id, err)
	}
	img, err := g.Image(ctx, id)
	if errors.Is(err, image.ErrNotFound) {
		return "", errs.InvalidParameterValue("Deploy ISO %s of node %s could not be found in Glance.", id, n.UUID)
	}
	if err != nil {
		return "", fmt.Errorf("node %s: look up deploy ISO %s: %w", n.UUID, id, err)
	}
	if img.Status != "active" {
		return "", errs.InvalidParameterValue("Deploy ISO %s of node %s is not active in Glance (status %s).", id, n.UUID, img.Status)
	}
	src := g.Source(img)
	data, err := src.Open(ctx)
	if err != nil {
		return "", fmt.Errorf("node %s: download deploy ISO %s: %w", n.UUID, id, err)
	}
	defer data.Close()
	checked, err := image.NewVerifier(src, data)
	if err != nil {
		return "", errs.InvalidParameterValue("Deploy ISO %s of node %s has an unusable checksum in Glance: %v.", id, n.UUID, err)
	}
	name := deployISOName(n.UUID)
	err = pub.Publish(ctx, name, checked, b.opts.MediaLifetime)
	// The mismatch shows at the end of the upload, which the publisher
	// then abandons; the caller's clean-up deletes whatever was stored.
	if mismatch := checked.Err(); mismatch != nil {
		return "", fmt.Errorf("node %s: deploy ISO %s does not match its checksum in Glance, not used: %w", n.UUID, id, mismatch)
	}
	if err != nil {
		return "", fmt.Errorf("node %s: publish deploy ISO %s: %w", n.UUID, id, err)
	}
	u, err := pub.URL(ctx, name, b.opts.MediaLifetime)
	if err != nil {
		return "", fmt.Errorf("node %s: deploy ISO URL: %w", n.UUID, err)
	}
	return u, nil
}

// swiftDeployISOURL is a temporary URL of object in the conductor's Swift
// container. The object is the operator's: clean-up never deletes it.
func swiftDeployISOURL(ctx context.Context, n *model.Node, pub publish.Publisher, object string, ttl time.Duration) (string, error) {
	if _, ok := pub.(*publish.Swift); !ok {
		return "", errs.InvalidParameterValue(
			"Deploy ISO %s%s of node %s is a Swift object, but this conductor publishes virtual media on its web server ([ilo] use_web_server_for_images).",
			swiftPrefix, object, n.UUID)
	}
	u, err := pub.URL(ctx, object, ttl)
	if err != nil {
		return "", fmt.Errorf("node %s: deploy ISO %s%s: %w", n.UUID, swiftPrefix, object, err)
	}
	return u, nil
}
