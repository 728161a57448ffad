package rpc

import "github.com/ferricbm/ferric/pkg/model"

// The conductor RPC API: each method declared once, with its wire name,
// argument and result types, the version it arrived in, how it travels and
// its documentation. The client (Method.Call), the server (Method.Handle,
// Serve) and the method table of README.md are built from these; a spec
// fails when README.md and this file differ. Adding a method is one
// declaration here, the conductor method and its registration.
//
// Since: 1.0 is the first contract, 17 methods. The others came while
// the version still said 1.0, before its first bump; 1.1 is the first
// version every conductor speaking it serves them at, so they say 1.1.
//
// Doc strings are Markdown table cells: `|` inside them is escaped.
var (
	UpdateNode = declare[UpdateNodeArgs, model.Node](Spec{
		Name: "update_node", Since: "1.0", Kind: KindCall,
		Doc: Doc{
			Args:   "1.1: `{\"node_id\", \"patch\": [op, …], \"api_version\": \"1.N\", \"reset_interfaces\": bool?}`; 1.2: `{\"node_id\", \"maintenance\": {\"enabled\": bool, \"reason\": string?}}`; 1.0: `{\"node\": Node, \"reset_interfaces\": bool?}` (see below)",
			Result: "Node (as saved)",
			Errors: "NodeLocked, InvalidState, NodeAssociated, PatchError, Invalid, InvalidParameterValue",
		}})
	DestroyNode = declareCommand[NodeArgs](Spec{
		Name: "destroy_node", Since: "1.0", Kind: KindCall,
		Doc: Doc{Args: "`{\"node_id\"}`", Errors: "NodeLocked, NodeAssociated, InvalidState, NodeProtected"}})
	ChangeNodePowerState = declareCommand[ChangePowerStateArgs](Spec{
		Name: "change_node_power_state", Since: "1.0", Kind: KindAsync,
		Doc: Doc{
			Args:   "`{\"node_id\", \"new_state\": \"power on\"\\|\"power off\"\\|\"rebooting\"\\|\"soft power off\"\\|\"soft rebooting\", \"timeout\": int?}` (seconds, 0/absent = default)",
			Errors: "NoFreeConductorWorker, InvalidParameterValue, NodeLocked",
		}})
	DoNodeDeploy = declareCommand[DeployArgs](Spec{
		Name: "do_node_deploy", Since: "1.0", Kind: KindAsync,
		Doc: Doc{
			Args:   "`{\"node_id\", \"rebuild\": bool?, \"configdrive\": string\\|object?, \"configdrive_id\": string?}`",
			Errors: "NodeLocked, NodeInMaintenance, InstanceDeployFailure, InvalidStateRequested, NodeProtected, NoFreeConductorWorker",
		}})
	DoNodeTearDown = declareCommand[NodeArgs](Spec{
		Name: "do_node_tear_down", Since: "1.0", Kind: KindAsync,
		Doc: Doc{Args: "`{\"node_id\"}`", Errors: "as `do_node_deploy`"}})
	DoNodeClean = declareCommand[CleanArgs](Spec{
		Name: "do_node_clean", Since: "1.0", Kind: KindAsync,
		Doc: Doc{
			Args:   "`{\"node_id\", \"clean_steps\": [{\"interface\", \"step\", \"args\"?}, …]}`",
			Errors: "InvalidParameterValue, InvalidStateRequested, NodeInMaintenance, NodeLocked, NoFreeConductorWorker",
		}})
	DoProvisioningAction = declareCommand[ProvisioningActionArgs](Spec{
		Name: "do_provisioning_action", Since: "1.0", Kind: KindAsync,
		Doc: Doc{
			Args:   "`{\"node_id\", \"action\": \"manage\"\\|\"provide\"\\|\"abort\"\\|\"adopt\"\\|\"inspect\"}`",
			Errors: "InvalidStateRequested, NodeInMaintenance, NodeLocked",
		}})
	ContinueNodeClean = declareCommand[NodeArgs](Spec{
		Name: "continue_node_clean", Since: "1.0", Kind: KindCast,
		Doc: Doc{Args: "`{\"node_id\"}`"}})
	ContinueNodeDeploy = declareCommand[NodeArgs](Spec{
		Name: "continue_node_deploy", Since: "1.0", Kind: KindCast,
		Doc: Doc{Args: "`{\"node_id\"}`"}})
	ValidateDriverInterfaces = declare[NodeArgs, map[string]ValidationResult](Spec{
		Name: "validate_driver_interfaces", Since: "1.0", Kind: KindCall,
		Doc: Doc{
			Args:   "`{\"node_id\"}`",
			Result: "`{\"<interface>\": {\"result\": true\\|false\\|null, \"reason\": string?}, …}`",
			Errors: "NodeLocked",
		}})
	SetBootDevice = declareCommand[SetBootDeviceArgs](Spec{
		Name: "set_boot_device", Since: "1.0", Kind: KindCall,
		Doc: Doc{Args: "`{\"node_id\", \"device\", \"persistent\": bool}`", Errors: "InvalidParameterValue, NodeLocked"}})
	GetBootDevice = declare[NodeArgs, BootDevice](Spec{
		Name: "get_boot_device", Since: "1.0", Kind: KindCall,
		Doc: Doc{Args: "`{\"node_id\"}`", Result: "`{\"boot_device\": string\\|null, \"persistent\": bool\\|null}`"}})
	GetSupportedBootDevices = declare[NodeArgs, []string](Spec{
		Name: "get_supported_boot_devices", Since: "1.0", Kind: KindCall,
		Doc: Doc{Args: "`{\"node_id\"}`", Result: "`[string, …]`"}})
	UpdatePort = declare[PortArgs, model.Port](Spec{
		Name: "update_port", Since: "1.0", Kind: KindCall,
		Doc: Doc{
			Args:   "1.2: `{\"port_id\", \"patch\": [op, …], \"api_version\": \"1.N\"}`; 1.0: `{\"port\": Port}` (the whole port as patched, unsaved)",
			Result: "Port (as saved)",
			Errors: "NodeLocked, PortNotFound, Conflict, PatchError, InvalidParameterValue",
		}})
	DestroyPort = declareCommand[PortArgs](Spec{
		Name: "destroy_port", Since: "1.0", Kind: KindCall,
		Doc: Doc{Args: "`{\"port\": Port}` (as stored)", Errors: "NodeLocked, PortNotFound"}})
	Heartbeat = declareCommand[HeartbeatArgs](Spec{
		Name: "heartbeat", Since: "1.0", Kind: KindAsync,
		Doc: Doc{
			Args:   "`{\"node_id\", \"callback_url\", \"agent_version\"?, \"agent_token\", \"agent_verify_ca\"?, \"source_address\"? (1.4)}`",
			Errors: "InvalidParameterValue (bad token), NodeLocked, NoFreeConductorWorker",
		}})
	VendorPassthru = declare[VendorPassthruArgs, VendorPassthruResult](Spec{
		Name: "vendor_passthru", Since: "1.0", Kind: KindPerMethod,
		Doc: Doc{
			Args:   "`{\"node_id\", \"driver_method\", \"http_method\", \"info\": object}`",
			Result: "`{\"return\": any, \"async\": bool, \"attach\": bool}`",
			Errors: "InvalidParameterValue, UnsupportedDriverExtension, NodeLocked, NoFreeConductorWorker",
		}})
	SetTargetRAIDConfig = declareCommand[SetTargetRAIDConfigArgs](Spec{
		Name: "set_target_raid_config", Since: "1.1", Kind: KindCall,
		Doc: Doc{
			Args:   "`{\"node_id\", \"target_raid_config\": object}` (`{}` clears)",
			Errors: "InvalidParameterValue, UnsupportedDriverExtension, NodeLocked",
		}})
	GetRAIDLogicalDiskProperties = declare[DriverArgs, map[string]string](Spec{
		Name: "get_raid_logical_disk_properties", Since: "1.1", Kind: KindCall,
		Doc: Doc{
			Args:   "`{\"driver_name\"}`",
			Result: "`{\"<key>\": \"<description>\", …}`",
			Errors: "DriverNotFound, UnsupportedDriverExtension",
		}})
	GetDriverProperties = declare[DriverArgs, map[string]string](Spec{
		Name: "get_driver_properties", Since: "1.1", Kind: KindCall,
		Doc: Doc{
			Args:   "`{\"driver_name\"}`",
			Result: "`{\"<property or driver_info key>\": \"<description>\", …}`",
			Errors: "DriverNotFound",
		}})
	SetConsoleMode = declareCommand[SetConsoleModeArgs](Spec{
		Name: "set_console_mode", Since: "1.1", Kind: KindAsync,
		Doc: Doc{Args: "`{\"node_id\", \"enabled\": bool}`", Errors: "UnsupportedDriverExtension, NodeLocked, NoFreeConductorWorker"}})
	GetConsoleInformation = declare[NodeArgs, map[string]any](Spec{
		Name: "get_console_information", Since: "1.1", Kind: KindCall,
		Doc: Doc{
			Args:   "`{\"node_id\"}`",
			Result: "console info object (`{\"type\", \"url\"}`)",
			Errors: "Invalid (console not enabled), UnsupportedDriverExtension",
		}})
	InjectNMI = declareCommand[NodeArgs](Spec{
		Name: "inject_nmi", Since: "1.1", Kind: KindCall,
		Doc: Doc{Args: "`{\"node_id\"}`", Errors: "UnsupportedDriverExtension, NodeLocked"}})
	GetNodeVendorPassthruMethods = declare[NodeArgs, map[string]VendorMethodInfo](Spec{
		Name: "get_node_vendor_passthru_methods", Since: "1.1", Kind: KindCall,
		Doc: Doc{
			Args:   "`{\"node_id\"}`",
			Result: "`{\"<method>\": {\"http_methods\", \"async\", \"description\", \"attach\", \"require_exclusive_lock\"}, …}`",
			Errors: "UnsupportedDriverExtension",
		}})
	GetDriverVendorPassthruMethods = declare[DriverArgs, map[string]VendorMethodInfo](Spec{
		Name: "get_driver_vendor_passthru_methods", Since: "1.1", Kind: KindCall,
		Doc: Doc{
			Args:   "`{\"driver_name\"}`",
			Result: "as above, without `require_exclusive_lock`",
			Errors: "DriverNotFound, UnsupportedDriverExtension",
		}})
	DriverVendorPassthru = declare[DriverVendorPassthruArgs, VendorPassthruResult](Spec{
		Name: "driver_vendor_passthru", Since: "1.1", Kind: KindPerMethod,
		Doc: Doc{
			Args:   "`{\"driver_name\", \"driver_method\", \"http_method\", \"info\": object}`",
			Result: "as `vendor_passthru`",
			Errors: "DriverNotFound, InvalidParameterValue, UnsupportedDriverExtension, NoFreeConductorWorker",
		}})
	GetNodeWithToken = declare[LookupArgs, NodeWithToken](Spec{
		Name: "get_node_with_token", Since: "1.1", Kind: KindCall,
		Doc: Doc{
			Args:   "`{\"node_id\", \"source_address\"? (1.4)}`",
			Result: "`{\"node\": Node, \"agent_token\": string}` (`\"******\"` once a token was issued)",
			Errors: "NodeLocked (first lookup only)",
		}})
	VIFList = declare[NodeArgs, []VIF](Spec{
		Name: "vif_list", Since: "1.1", Kind: KindCall,
		Doc: Doc{Args: "`{\"node_id\"}`", Result: "`[{\"id\"}, …]`", Errors: "UnsupportedDriverExtension"}})
	VIFAttach = declareCommand[VIFAttachArgs](Spec{
		Name: "vif_attach", Since: "1.1", Kind: KindCall,
		Doc: Doc{
			Args:   "`{\"node_id\", \"vif_info\": {\"id\"}}`",
			Errors: "Conflict (already attached), Invalid (no free port), UnsupportedDriverExtension, NodeLocked",
		}})
	VIFDetach = declareCommand[VIFDetachArgs](Spec{
		Name: "vif_detach", Since: "1.1", Kind: KindCall,
		Doc: Doc{Args: "`{\"node_id\", \"vif_id\"}`", Errors: "Invalid (not attached), NodeLocked"}})
	UpdateVolumeConnector = declare[VolumeConnectorArgs, model.VolumeConnector](Spec{
		Name: "update_volume_connector", Since: "1.1", Kind: KindCall,
		Doc: Doc{
			Args:   "1.3: `{\"volume_connector_id\", \"patch\": [op, …], \"api_version\": \"1.N\"}`; 1.1: `{\"connector\": VolumeConnector}` (the whole connector as patched, unsaved)",
			Result: "VolumeConnector (as saved)",
			Errors: "NodeLocked, VolumeConnectorNotFound, InvalidStateRequested (node not powered off), PatchError, InvalidParameterValue, AlreadyExists, Conflict",
		}})
	DestroyVolumeConnector = declareCommand[VolumeConnectorArgs](Spec{
		Name: "destroy_volume_connector", Since: "1.1", Kind: KindCall,
		Doc: Doc{Args: "`{\"connector\": {\"uuid\"}}`", Errors: "NodeLocked, VolumeConnectorNotFound, InvalidStateRequested"}})
	UpdateVolumeTarget = declare[VolumeTargetArgs, model.VolumeTarget](Spec{
		Name: "update_volume_target", Since: "1.1", Kind: KindCall,
		Doc: Doc{
			Args:   "1.3: `{\"volume_target_id\", \"patch\": [op, …], \"api_version\": \"1.N\"}`; 1.1: `{\"target\": VolumeTarget}` (the whole target as patched, unsaved)",
			Result: "VolumeTarget (as saved)",
			Errors: "as `update_volume_connector`, VolumeTargetNotFound",
		}})
	DestroyVolumeTarget = declareCommand[VolumeTargetArgs](Spec{
		Name: "destroy_volume_target", Since: "1.1", Kind: KindCall,
		Doc: Doc{Args: "`{\"target\": {\"uuid\"}}`", Errors: "NodeLocked, VolumeTargetNotFound, InvalidStateRequested"}})
	UpdatePortgroup = declare[PortgroupArgs, model.Portgroup](Spec{
		Name: "update_portgroup", Since: "1.1", Kind: KindCall,
		Doc: Doc{
			Args:   "1.2: `{\"portgroup_id\", \"patch\": [op, …], \"api_version\": \"1.N\"}`; 1.1: `{\"portgroup\": Portgroup}` (the whole group as patched, unsaved)",
			Result: "Portgroup (as saved)",
			Errors: "NodeLocked, NotFound, InvalidState, PatchError, InvalidParameterValue",
		}})
	DestroyPortgroup = declareCommand[PortgroupArgs](Spec{
		Name: "destroy_portgroup", Since: "1.1", Kind: KindCall,
		Doc: Doc{Args: "`{\"portgroup\": Portgroup}` (as stored)", Errors: "NodeLocked, NotFound, InvalidState (the group has ports)"}})
	AddNodeTraits = declareCommand[NodeTraitsArgs](Spec{
		Name: "add_node_traits", Since: "1.1", Kind: KindCall,
		Doc: Doc{
			Args:   "`{\"node_id\", \"traits\": [string, …], \"replace\": bool?}` (`replace` makes `traits` the whole set)",
			Errors: "NodeLocked, InvalidParameterValue (too many traits)",
		}})
	RemoveNodeTraits = declareCommand[NodeTraitsArgs](Spec{
		Name: "remove_node_traits", Since: "1.1", Kind: KindCall,
		Doc: Doc{Args: "`{\"node_id\", \"traits\": [string, …]\\|null}` (`null` removes all)", Errors: "NodeLocked, NotFound (the node has no such trait)"}})
	DoNodeRescue = declareCommand[RescueArgs](Spec{
		Name: "do_node_rescue", Since: "1.1", Kind: KindAsync,
		Doc: Doc{
			Args:   "`{\"node_id\", \"rescue_password\"}`",
			Errors: "InvalidParameterValue, InvalidStateRequested, UnsupportedDriverExtension, NodeLocked, NoFreeConductorWorker",
		}})
	DoNodeUnrescue = declareCommand[NodeArgs](Spec{
		Name: "do_node_unrescue", Since: "1.1", Kind: KindAsync,
		Doc: Doc{Args: "`{\"node_id\"}`", Errors: "InvalidStateRequested, UnsupportedDriverExtension, NodeLocked, NoFreeConductorWorker"}})
	GetBIOSSettings = declare[NodeArgs, []BIOSSetting](Spec{
		Name: "get_bios_settings", Since: "1.1", Kind: KindCall,
		Doc: Doc{Args: "`{\"node_id\"}`", Result: "`[{\"name\", \"value\"}, …]`", Errors: "UnsupportedDriverExtension"}})
	CreateAllocation = declare[AllocationArgs, model.Allocation](Spec{
		Name: "create_allocation", Since: "1.5", Kind: KindCall,
		Doc: Doc{
			Args:   "`{\"allocation\": Allocation}` (unsaved; `candidate_nodes` as node UUIDs)",
			Result: "Allocation (as stored, `allocating`; the conductor then looks for a node)",
			Errors: "AlreadyExists, DuplicateName",
		}})
	DestroyAllocation = declareCommand[AllocationArgs](Spec{
		Name: "destroy_allocation", Since: "1.5", Kind: KindCall,
		Doc: Doc{
			Args:   "`{\"allocation\": Allocation}` (as stored)",
			Errors: "NotFound, NodeLocked, InvalidState (the node is active or busy, and not in maintenance)",
		}})
)
