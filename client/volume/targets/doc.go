/*
Package targets manages volume targets of the Bare Metal API
(/v1/volume/targets, microversion 1.32 or later): the remote volumes
attached to a node, ordered by boot index (0 is the boot volume).

Properties hold connection information; the server masks credentials in
them ("******") in every response, so what Extract returns is never a
secret.

	t, err := targets.Create(ctx, client, targets.CreateOpts{
		NodeUUID:   "c2d8a1f4-7b3e-4e0a-9d5c-1a2b3c4d5e6f",
		VolumeType: "iscsi",
		BootIndex:  0,
		VolumeID:   "a1b2c3d4-e5f6-4711-8899-aabbccddeeff",
		Properties: map[string]any{"target_iqn": "iqn.2010-10.org.example:vol-a1b2"},
	}).Extract()

	pages, err := targets.ListByNode(client, "node-07", targets.ListOpts{Detail: true}).AllPages(ctx)
	all, err := targets.ExtractTargets(pages)
	pages, err = targets.ListDetail(client, targets.ListOpts{Node: "node-07"}).AllPages(ctx) // /v1/volume/targets/detail

	t, err = targets.Update(ctx, client, id, targets.UpdateOpts{
		targets.UpdateOperation{Op: targets.ReplaceOp, Path: "/boot_index", Value: 1},
	}).Extract()
	err = targets.Delete(ctx, client, id).ExtractErr()
*/
package targets
