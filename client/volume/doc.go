/*
Package volume reads the Bare Metal API's volume root documents, and holds
what its subpackages connectors and targets share.

The volume API exists from microversion 1.32: set the service client's
Microversion to MinMicroversion or later, or every call answers 404.

	client.Microversion = volume.MinMicroversion
	v, err := volume.Get(ctx, client).Extract()
	links, err := volume.GetByNode(ctx, client, "node-07").Extract()
*/
package volume
