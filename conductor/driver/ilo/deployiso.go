package ilo

import (
	"context"
	"errors"
	"fmt"

	"github.com/ferricbm/ferric/conductor/vmedia/publish"
	"github.com/ferricbm/ferric/deploy/image"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

// deployISOName is the object a node's deploy ISO taken from Glance is
// published as.
func deployISOName(nodeUUID string) string { return "deploy-" + nodeUUID }

// deployISOURL is where the BMC fetches the deploy ISO: deploy_iso itself
// when it is a URL; for a Glance image id, the image read through the
// Image API and published for the node, for the media lifetime, behind a
// temporary URL (the BMC has no Glance credentials).
func (b *Boot) deployISOURL(ctx context.Context, n *model.Node, pub publish.Publisher) (string, error) {
	ref, err := b.deployISO(n)
	if err != nil {
		return "", err
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
	data, err := g.Source(img).Open(ctx)
	if err != nil {
		return "", fmt.Errorf("node %s: download deploy ISO %s: %w", n.UUID, id, err)
	}
	defer data.Close()
	name := deployISOName(n.UUID)
	if err := pub.Publish(ctx, name, data, b.opts.MediaLifetime); err != nil {
		return "", fmt.Errorf("node %s: publish deploy ISO %s: %w", n.UUID, id, err)
	}
	u, err := pub.URL(ctx, name, b.opts.MediaLifetime)
	if err != nil {
		return "", fmt.Errorf("node %s: deploy ISO URL: %w", n.UUID, err)
	}
	return u, nil
}
