package targets

import (
	"net/url"

	"github.com/gophercloud/gophercloud/v2"
)

func rootURL(client *gophercloud.ServiceClient) string {
	return client.ServiceURL("volume", "targets")
}

func detailURL(client *gophercloud.ServiceClient) string {
	return client.ServiceURL("volume", "targets", "detail")
}

func resourceURL(client *gophercloud.ServiceClient, id string) string {
	return client.ServiceURL("volume", "targets", url.PathEscape(id))
}

func nodeURL(client *gophercloud.ServiceClient, node string) string {
	return client.ServiceURL("nodes", url.PathEscape(node), "volume", "targets")
}
