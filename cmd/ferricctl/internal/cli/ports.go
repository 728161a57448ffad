package cli

import (
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/ports"
	"github.com/spf13/cobra"

	"github.com/ferricbm/ferric/cmd/ferricctl/internal/output"
)

type port = ports.Port

var portColumns = columns[port]{
	{"uuid", "UUID", func(p port) any { return p.UUID }},
	{"address", "Address", func(p port) any { return p.Address }},
	{"node_uuid", "Node UUID", func(p port) any { return p.NodeUUID }},
	{"pxe_enabled", "PXE boot enabled", func(p port) any { return p.PXEEnabled }},
}

func portCommands(s *session) *cobra.Command {
	cmd := group("port", "Bare metal ports: the MAC addresses a node's ramdisk is found by")
	cmd.AddCommand(portCreate(s))
	return cmd
}

func portCreate(s *session) *cobra.Command {
	var opts ports.CreateOpts
	cmd := &cobra.Command{
		Use:   "create <address> --node <uuid>",
		Short: "Register a network port (MAC address) of a node",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Address = args[0]
			c, err := s.baremetal(cmd.Context(), "")
			if err != nil {
				return err
			}
			created, err := ports.Create(cmd.Context(), c, opts).Extract()
			if err != nil {
				return err
			}
			return output.WriteRecord(s.stdout, s.out, portColumns.record(*created, portColumns.names()))
		},
	}
	cmd.Flags().StringVar(&opts.NodeUUID, "node", "", "UUID of the node the port belongs to")
	_ = cmd.MarkFlagRequired("node")
	return cmd
}
