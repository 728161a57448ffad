// Package model holds Ferric's persistent domain records. The same types are
// the gorm models (db), the RPC payloads (rpc) and the source of the API's
// representations (api-service), so a field is declared once. JSON names are
// the Bare Metal API field names; internal ids never leave the process.
package model

import "time"

// Node is one bare-metal machine.
type Node struct {
	ID   int64  `gorm:"column:id;primaryKey;autoIncrement" json:"-"`
	UUID string `gorm:"column:uuid;type:varchar(36);not null;uniqueIndex:uniq_nodes_uuid" json:"uuid"`
	// Name is unique when set; NULL for unnamed nodes.
	Name *string `gorm:"column:name;type:varchar(255);uniqueIndex:uniq_nodes_name" json:"name"`

	Driver               string     `gorm:"column:driver;type:varchar(255);not null;index:idx_nodes_driver" json:"driver"`
	DriverInfo           JSONObject `gorm:"column:driver_info;type:mediumtext" json:"driver_info"`
	DriverInternalInfo   JSONObject `gorm:"column:driver_internal_info;type:mediumtext" json:"driver_internal_info"`
	Properties           JSONObject `gorm:"column:properties;type:mediumtext" json:"properties"`
	InstanceInfo         JSONObject `gorm:"column:instance_info;type:longtext" json:"instance_info"`
	InstanceUUID         *string    `gorm:"column:instance_uuid;type:varchar(36);uniqueIndex:uniq_nodes_instance_uuid" json:"instance_uuid"`
	ChassisUUID          *string    `gorm:"column:chassis_uuid;type:varchar(36);index:idx_nodes_chassis_uuid" json:"chassis_uuid"`
	Extra                JSONObject `gorm:"column:extra;type:mediumtext" json:"extra"`
	PowerState           *string    `gorm:"column:power_state;type:varchar(15)" json:"power_state"`
	TargetPowerState     *string    `gorm:"column:target_power_state;type:varchar(15)" json:"target_power_state"`
	ProvisionState       *string    `gorm:"column:provision_state;type:varchar(15);index:idx_nodes_provision_state;index:idx_nodes_timeouts,priority:1" json:"provision_state"`
	TargetProvisionState *string    `gorm:"column:target_provision_state;type:varchar(15)" json:"target_provision_state"`
	ProvisionUpdatedAt   *time.Time `gorm:"column:provision_updated_at;precision:6;index:idx_nodes_timeouts,priority:4" json:"provision_updated_at"`
	Maintenance          bool       `gorm:"column:maintenance;not null;default:false;index:idx_nodes_timeouts,priority:3" json:"maintenance"`
	MaintenanceReason    *string    `gorm:"column:maintenance_reason;type:text" json:"maintenance_reason"`
	Fault                *string    `gorm:"column:fault;type:varchar(255)" json:"fault"`
	LastError            *string    `gorm:"column:last_error;type:text" json:"last_error"`
	// Reservation is the node lock: the hostname of the conductor holding it.
	Reservation *string `gorm:"column:reservation;type:varchar(255);index:idx_nodes_reservation;index:idx_nodes_timeouts,priority:2" json:"reservation"`
	// ReservationEpoch is the registration epoch of the conductor
	// incarnation holding the lock: a worker of an earlier run of the same
	// host cannot write under a lock its successor took.
	ReservationEpoch  *int64     `gorm:"column:reservation_epoch" json:"-"`
	ConductorAffinity *int64     `gorm:"column:conductor_affinity" json:"-"`
	ConductorGroup    string     `gorm:"column:conductor_group;type:varchar(255);not null;default:'';index:idx_nodes_conductor_group" json:"conductor_group"`
	ConsoleEnabled    bool       `gorm:"column:console_enabled;not null;default:false" json:"console_enabled"`
	CleanStep         JSONObject `gorm:"column:clean_step;type:mediumtext" json:"clean_step"`
	DeployStep        JSONObject `gorm:"column:deploy_step;type:mediumtext" json:"deploy_step"`
	RAIDConfig        JSONObject `gorm:"column:raid_config;type:mediumtext" json:"raid_config"`
	TargetRAIDConfig  JSONObject `gorm:"column:target_raid_config;type:mediumtext" json:"target_raid_config"`

	InspectionStartedAt  *time.Time `gorm:"column:inspection_started_at;precision:6" json:"inspection_started_at"`
	InspectionFinishedAt *time.Time `gorm:"column:inspection_finished_at;precision:6" json:"inspection_finished_at"`

	ResourceClass       *string    `gorm:"column:resource_class;type:varchar(80);index:idx_nodes_resource_class" json:"resource_class"`
	BIOSInterface       *string    `gorm:"column:bios_interface;type:varchar(255)" json:"bios_interface"`
	BootInterface       *string    `gorm:"column:boot_interface;type:varchar(255)" json:"boot_interface"`
	ConsoleInterface    *string    `gorm:"column:console_interface;type:varchar(255)" json:"console_interface"`
	DeployInterface     *string    `gorm:"column:deploy_interface;type:varchar(255)" json:"deploy_interface"`
	InspectInterface    *string    `gorm:"column:inspect_interface;type:varchar(255)" json:"inspect_interface"`
	ManagementInterface *string    `gorm:"column:management_interface;type:varchar(255)" json:"management_interface"`
	NetworkInterface    *string    `gorm:"column:network_interface;type:varchar(255)" json:"network_interface"`
	PowerInterface      *string    `gorm:"column:power_interface;type:varchar(255)" json:"power_interface"`
	RAIDInterface       *string    `gorm:"column:raid_interface;type:varchar(255)" json:"raid_interface"`
	RescueInterface     *string    `gorm:"column:rescue_interface;type:varchar(255)" json:"rescue_interface"`
	StorageInterface    *string    `gorm:"column:storage_interface;type:varchar(255)" json:"storage_interface"`
	VendorInterface     *string    `gorm:"column:vendor_interface;type:varchar(255)" json:"vendor_interface"`
	Traits              StringList `gorm:"column:traits;type:text" json:"traits"`
	AutomatedClean      *bool      `gorm:"column:automated_clean" json:"automated_clean"`
	Protected           bool       `gorm:"column:protected;not null;default:false" json:"protected"`
	ProtectedReason     *string    `gorm:"column:protected_reason;type:text" json:"protected_reason"`
	Owner               *string    `gorm:"column:owner;type:varchar(255);index:idx_nodes_owner" json:"owner"`
	Lessee              *string    `gorm:"column:lessee;type:varchar(255);index:idx_nodes_lessee" json:"lessee"`
	Description         *string    `gorm:"column:description;type:text" json:"description"`
	Retired             bool       `gorm:"column:retired;not null;default:false" json:"retired"`
	RetiredReason       *string    `gorm:"column:retired_reason;type:text" json:"retired_reason"`
	// AllocationID is the allocation that reserved the node; while it is
	// set, InstanceUUID is that allocation's uuid.
	AllocationID *int64 `gorm:"column:allocation_id;index:idx_nodes_allocation_id" json:"-"`

	CreatedAt time.Time  `gorm:"column:created_at;not null;precision:6;autoCreateTime:false" json:"created_at"`
	UpdatedAt *time.Time `gorm:"column:updated_at;precision:6;autoUpdateTime:false" json:"updated_at"`
}

func (Node) TableName() string { return "nodes" }

// Port is a network interface of a node, identified by its MAC address.
type Port struct {
	ID                  int64      `gorm:"column:id;primaryKey;autoIncrement" json:"-"`
	UUID                string     `gorm:"column:uuid;type:varchar(36);not null;uniqueIndex:uniq_ports_uuid" json:"uuid"`
	Address             string     `gorm:"column:address;type:varchar(18);not null;uniqueIndex:uniq_ports_address" json:"address"`
	NodeID              int64      `gorm:"column:node_id;not null;index:idx_ports_node_id" json:"-"`
	Extra               JSONObject `gorm:"column:extra;type:mediumtext" json:"extra"`
	InternalInfo        JSONObject `gorm:"column:internal_info;type:mediumtext" json:"internal_info"`
	LocalLinkConnection JSONObject `gorm:"column:local_link_connection;type:mediumtext" json:"local_link_connection"`
	PXEEnabled          bool       `gorm:"column:pxe_enabled;not null;default:true" json:"pxe_enabled"`
	PhysicalNetwork     *string    `gorm:"column:physical_network;type:varchar(64)" json:"physical_network"`
	// IsSmartNIC marks a port on a Smart NIC, whose network agent runs on
	// the card: its local_link_connection names the card's hostname and
	// port instead of a switch (1.53).
	IsSmartNIC bool `gorm:"column:is_smartnic;not null;default:false" json:"is_smartnic"`
	// PortgroupID is the port group the port is a member of, if any; it
	// must belong to the same node.
	PortgroupID *int64     `gorm:"column:portgroup_id;index:idx_ports_portgroup_id" json:"-"`
	CreatedAt   time.Time  `gorm:"column:created_at;not null;precision:6;autoCreateTime:false" json:"created_at"`
	UpdatedAt   *time.Time `gorm:"column:updated_at;precision:6;autoUpdateTime:false" json:"updated_at"`

	// NodeUUID is filled by the repository from the owning node; it is not
	// a column.
	NodeUUID string `gorm:"-" json:"node_uuid"`
	// PortgroupUUID is filled by the repository from the port group; it is
	// not a column.
	PortgroupUUID *string `gorm:"-" json:"portgroup_uuid"`
}

func (Port) TableName() string { return "ports" }

// Chassis is a rack or enclosure grouping nodes. Nodes refer to it by
// uuid (nodes.chassis_uuid).
type Chassis struct {
	ID          int64      `gorm:"column:id;primaryKey;autoIncrement" json:"-"`
	UUID        string     `gorm:"column:uuid;type:varchar(36);not null;uniqueIndex:uniq_chassis_uuid" json:"uuid"`
	Description *string    `gorm:"column:description;type:varchar(255)" json:"description"`
	Extra       JSONObject `gorm:"column:extra;type:mediumtext" json:"extra"`
	CreatedAt   time.Time  `gorm:"column:created_at;not null;precision:6;autoCreateTime:false" json:"created_at"`
	UpdatedAt   *time.Time `gorm:"column:updated_at;precision:6;autoUpdateTime:false" json:"updated_at"`
}

func (Chassis) TableName() string { return "chassis" }

// Portgroup is a bond (link aggregation) of some of a node's ports.
// Name and address are unique when set.
type Portgroup struct {
	ID      int64      `gorm:"column:id;primaryKey;autoIncrement" json:"-"`
	UUID    string     `gorm:"column:uuid;type:varchar(36);not null;uniqueIndex:uniq_portgroups_uuid" json:"uuid"`
	Name    *string    `gorm:"column:name;type:varchar(255);uniqueIndex:uniq_portgroups_name" json:"name"`
	Address *string    `gorm:"column:address;type:varchar(18);uniqueIndex:uniq_portgroups_address" json:"address"`
	NodeID  int64      `gorm:"column:node_id;not null;index:idx_portgroups_node_id" json:"-"`
	Extra   JSONObject `gorm:"column:extra;type:mediumtext" json:"extra"`
	// InternalInfo is written by the conductor only.
	InternalInfo             JSONObject `gorm:"column:internal_info;type:mediumtext" json:"internal_info"`
	StandalonePortsSupported bool       `gorm:"column:standalone_ports_supported;not null;default:true" json:"standalone_ports_supported"`
	Mode                     *string    `gorm:"column:mode;type:varchar(255)" json:"mode"`
	Properties               JSONObject `gorm:"column:properties;type:mediumtext" json:"properties"`
	CreatedAt                time.Time  `gorm:"column:created_at;not null;precision:6;autoCreateTime:false" json:"created_at"`
	UpdatedAt                *time.Time `gorm:"column:updated_at;precision:6;autoUpdateTime:false" json:"updated_at"`

	// NodeUUID is filled by the repository from the owning node; it is not
	// a column.
	NodeUUID string `gorm:"-" json:"node_uuid"`
}

func (Portgroup) TableName() string { return "portgroups" }

// Conductor is a registered conductor process.
type Conductor struct {
	ID             int64  `gorm:"column:id;primaryKey;autoIncrement" json:"-"`
	Hostname       string `gorm:"column:hostname;type:varchar(255);not null;uniqueIndex:uniq_conductors_hostname" json:"hostname"`
	Online         bool   `gorm:"column:online;not null;default:true" json:"-"`
	ConductorGroup string `gorm:"column:conductor_group;type:varchar(255);not null;default:''" json:"conductor_group"`
	// Epoch counts the registrations of this hostname: each start of a
	// conductor is a new incarnation, whose node locks carry its epoch.
	Epoch     int64      `gorm:"column:epoch;not null;default:0" json:"-"`
	CreatedAt time.Time  `gorm:"column:created_at;not null;precision:6;autoCreateTime:false" json:"created_at"`
	UpdatedAt *time.Time `gorm:"column:updated_at;precision:6;autoUpdateTime:false" json:"updated_at"`
}

func (Conductor) TableName() string { return "conductors" }

// ConductorHardwareInterface is one enabled interface implementation of a
// hardware type on a conductor; the hash ring is built from these rows.
type ConductorHardwareInterface struct {
	ID            int64  `gorm:"column:id;primaryKey;autoIncrement"`
	ConductorID   int64  `gorm:"column:conductor_id;not null;uniqueIndex:uniq_chi,priority:1"`
	HardwareType  string `gorm:"column:hardware_type;type:varchar(255);not null;uniqueIndex:uniq_chi,priority:2"`
	InterfaceType string `gorm:"column:interface_type;type:varchar(16);not null;uniqueIndex:uniq_chi,priority:3"`
	InterfaceName string `gorm:"column:interface_name;type:varchar(255);not null;uniqueIndex:uniq_chi,priority:4"`
	Default       bool   `gorm:"column:default;not null;default:false"`
}

func (ConductorHardwareInterface) TableName() string { return "conductor_hardware_interfaces" }

// VolumeConnector is an initiator identity of a node (iSCSI IQN, IP, MAC,
// FC WWNN/WWPN, ...) used to attach remote volumes to it. A (type,
// connector_id) pair is unique across all nodes: the same initiator cannot
// belong to two machines.
type VolumeConnector struct {
	ID          int64      `gorm:"column:id;primaryKey;autoIncrement" json:"-"`
	UUID        string     `gorm:"column:uuid;type:varchar(36);not null;uniqueIndex:uniq_volume_connectors_uuid" json:"uuid"`
	NodeID      int64      `gorm:"column:node_id;not null;index:idx_volume_connectors_node_id" json:"-"`
	Type        string     `gorm:"column:type;type:varchar(32);not null;uniqueIndex:uniq_volume_connectors_type_connector_id,priority:1" json:"type"`
	ConnectorID string     `gorm:"column:connector_id;type:varchar(255);not null;uniqueIndex:uniq_volume_connectors_type_connector_id,priority:2" json:"connector_id"`
	Extra       JSONObject `gorm:"column:extra;type:mediumtext" json:"extra"`
	CreatedAt   time.Time  `gorm:"column:created_at;not null;precision:6;autoCreateTime:false" json:"created_at"`
	UpdatedAt   *time.Time `gorm:"column:updated_at;precision:6;autoUpdateTime:false" json:"updated_at"`

	// NodeUUID is filled by the repository from the owning node; it is not
	// a column.
	NodeUUID string `gorm:"-" json:"node_uuid"`
}

func (VolumeConnector) TableName() string { return "volume_connectors" }

// VolumeTarget is a remote volume attached to a node. BootIndex orders the
// node's volumes (0 is the boot volume) and is unique per node.
type VolumeTarget struct {
	ID         int64  `gorm:"column:id;primaryKey;autoIncrement" json:"-"`
	UUID       string `gorm:"column:uuid;type:varchar(36);not null;uniqueIndex:uniq_volume_targets_uuid" json:"uuid"`
	NodeID     int64  `gorm:"column:node_id;not null;uniqueIndex:uniq_volume_targets_node_id_boot_index,priority:1" json:"-"`
	VolumeType string `gorm:"column:volume_type;type:varchar(64);not null" json:"volume_type"`
	// Properties holds the connection information, credentials included:
	// mask it (pkg/secrets) before it leaves the process.
	Properties JSONObject `gorm:"column:properties;type:mediumtext" json:"properties"`
	BootIndex  int        `gorm:"column:boot_index;type:integer;not null;uniqueIndex:uniq_volume_targets_node_id_boot_index,priority:2" json:"boot_index"`
	VolumeID   string     `gorm:"column:volume_id;type:varchar(36);not null" json:"volume_id"`
	Extra      JSONObject `gorm:"column:extra;type:mediumtext" json:"extra"`
	CreatedAt  time.Time  `gorm:"column:created_at;not null;precision:6;autoCreateTime:false" json:"created_at"`
	UpdatedAt  *time.Time `gorm:"column:updated_at;precision:6;autoUpdateTime:false" json:"updated_at"`

	// NodeUUID is filled by the repository from the owning node; it is not
	// a column.
	NodeUUID string `gorm:"-" json:"node_uuid"`
}

func (VolumeTarget) TableName() string { return "volume_targets" }

// Allocation is a request for an available node of a resource class (and
// traits, and among candidate nodes) and, once granted, the reservation of
// that node: NodeID is set and the node's instance_uuid is the
// allocation's uuid.
type Allocation struct {
	ID   int64   `gorm:"column:id;primaryKey;autoIncrement" json:"-"`
	UUID string  `gorm:"column:uuid;type:varchar(36);not null;uniqueIndex:uniq_allocations_uuid" json:"uuid"`
	Name *string `gorm:"column:name;type:varchar(255);uniqueIndex:uniq_allocations_name" json:"name"`
	// NodeID is the reserved node, once the allocation is active.
	NodeID        *int64     `gorm:"column:node_id;index:idx_allocations_node_id" json:"-"`
	State         string     `gorm:"column:state;type:varchar(15);not null;index:idx_allocations_state" json:"state"`
	LastError     *string    `gorm:"column:last_error;type:text" json:"last_error"`
	ResourceClass *string    `gorm:"column:resource_class;type:varchar(80);index:idx_allocations_resource_class" json:"resource_class"`
	Traits        StringList `gorm:"column:traits;type:text" json:"traits"`
	// CandidateNodes are node uuids, in the order the client named them.
	CandidateNodes StringList `gorm:"column:candidate_nodes;type:text" json:"candidate_nodes"`
	Extra          JSONObject `gorm:"column:extra;type:mediumtext" json:"extra"`
	// ConductorAffinity is the conductor (by id) processing the allocation.
	ConductorAffinity *int64     `gorm:"column:conductor_affinity" json:"-"`
	CreatedAt         time.Time  `gorm:"column:created_at;not null;precision:6;autoCreateTime:false" json:"created_at"`
	UpdatedAt         *time.Time `gorm:"column:updated_at;precision:6;autoUpdateTime:false" json:"updated_at"`

	// NodeUUID is filled by the repository from the reserved node; it is
	// not a column.
	NodeUUID *string `gorm:"-" json:"node_uuid"`
}

func (Allocation) TableName() string { return "allocations" }

// The states of an allocation: it starts allocating and ends active (a
// node is reserved) or error (none could be).
const (
	AllocationAllocating = "allocating"
	AllocationActive     = "active"
	AllocationError      = "error"
)
