/*
Package connectors manages volume connectors of the Bare Metal API
(/v1/volume/connectors, microversion 1.32 or later): the initiator
identities (iSCSI IQN, IP, MAC, FC WWNN/WWPN) a node attaches volumes with.

Create a connector:

	c, err := connectors.Create(ctx, client, connectors.CreateOpts{
		NodeUUID:    "c2d8a1f4-7b3e-4e0a-9d5c-1a2b3c4d5e6f",
		Type:        "iqn",
		ConnectorID: "iqn.2004-06.example.net:node-07",
	}).Extract()

List every connector of a node, all pages (the pager follows the
server's "next" links, keeping the node scope and the other options):

	pages, err := connectors.ListByNode(client, "node-07", connectors.ListOpts{Detail: true}).AllPages(ctx)
	all, err := connectors.ExtractConnectors(pages)

ListDetail reads /v1/volume/connectors/detail, every field of every
connector (optionally of one node, with ListOpts.Node):

	pages, err := connectors.ListDetail(client, connectors.ListOpts{Node: "node-07"}).AllPages(ctx)

Update with JSON patch operations, and delete:

	c, err := connectors.Update(ctx, client, id, connectors.UpdateOpts{
		connectors.UpdateOperation{Op: connectors.AddOp, Path: "/extra/fabric", Value: "B"},
	}).Extract()
	err = connectors.Delete(ctx, client, id).ExtractErr()
*/
package connectors
