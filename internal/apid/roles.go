package apid

import (
	"slices"

	"github.com/talosbox/talosbox/internal/api/inspect"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/api/storage"
	timeapi "github.com/talosbox/talosbox/internal/api/time"
	"github.com/talosbox/talosbox/internal/role"
)

// Roles, as Talos names them.
const ()

// Sets of roles the table is written with.
var (
	readers   = []role.Role{role.Admin, role.Operator, role.Reader}
	operators = []role.Role{role.Admin, role.Operator}
	admins    = []role.Role{role.Admin}
)

// methodRoles is the one place that says who may call what. Every RPC the
// server registers must be here (a test walks the service descriptors);
// a method missing from it is denied to everyone. Readers read, but not
// file contents (Read, Copy) and never secrets; operators add the
// lifecycle of services and of the node, and image pulls; the rest is
// for admins.
var methodRoles = map[string][]role.Role{
	machine.MachineService_Version_FullMethodName:     readers,
	machine.MachineService_Hostname_FullMethodName:    readers,
	machine.MachineService_ServiceList_FullMethodName: readers,
	machine.MachineService_Logs_FullMethodName:        readers,
	machine.MachineService_Dmesg_FullMethodName:       readers,
	machine.MachineService_Events_FullMethodName:      readers,
	machine.MachineService_List_FullMethodName:        readers,
	machine.MachineService_Mounts_FullMethodName:      readers,
	machine.MachineService_Memory_FullMethodName:      readers,
	machine.MachineService_Processes_FullMethodName:   readers,
	machine.MachineService_LoadAvg_FullMethodName:     readers,
	machine.MachineService_SystemStat_FullMethodName:  readers,
	machine.MachineService_Containers_FullMethodName:  readers,
	machine.MachineService_Stats_FullMethodName:       readers,
	machine.MachineService_ImageList_FullMethodName:   readers,

	machine.MachineService_ServiceStart_FullMethodName:   operators,
	machine.MachineService_ServiceStop_FullMethodName:    operators,
	machine.MachineService_ServiceRestart_FullMethodName: operators,
	machine.MachineService_Reboot_FullMethodName:         operators,
	machine.MachineService_Shutdown_FullMethodName:       operators,
	// Pulling fills the node's disk and talks to registries.
	machine.MachineService_ImagePull_FullMethodName: operators,

	machine.MachineService_EtcdMemberList_FullMethodName: readers,
	machine.MachineService_EtcdStatus_FullMethodName:     readers,
	machine.MachineService_EtcdAlarmList_FullMethodName:  readers,

	machine.MachineService_EtcdRemoveMemberByID_FullMethodName:  operators,
	machine.MachineService_EtcdLeaveCluster_FullMethodName:      operators,
	machine.MachineService_EtcdForfeitLeadership_FullMethodName: operators,
	machine.MachineService_EtcdDefragment_FullMethodName:        operators,
	machine.MachineService_EtcdAlarmDisarm_FullMethodName:       operators,
	// Backups are the one thing os:etcd:backup may do.
	machine.MachineService_EtcdSnapshot_FullMethodName: {role.Admin, role.Operator, role.EtcdBackup},

	machine.MachineService_EtcdRecover_FullMethodName: admins,
	machine.MachineService_Read_FullMethodName:        admins,
	machine.MachineService_Copy_FullMethodName:        admins,
	// A kubeconfig is a cluster-admin credential.
	machine.MachineService_Kubeconfig_FullMethodName:                  admins,
	machine.MachineService_ApplyConfiguration_FullMethodName:          admins,
	machine.MachineService_Bootstrap_FullMethodName:                   admins,
	machine.MachineService_Upgrade_FullMethodName:                     admins,
	machine.MachineService_Rollback_FullMethodName:                    admins,
	machine.MachineService_Reset_FullMethodName:                       admins,
	machine.MachineService_GenerateClientConfiguration_FullMethodName: admins,
	// META holds the STATE encryption config and the upgrade fallback:
	// admins, and the role made for it, as on Talos.
	machine.MachineService_MetaWrite_FullMethodName:  {role.Admin, role.MetaWriter},
	machine.MachineService_MetaDelete_FullMethodName: {role.Admin, role.MetaWriter},

	// Talos's ImageService, with Talos's roles: importing and removing
	// change what the kubelet runs.
	machine.ImageService_List_FullMethodName:   readers,
	machine.ImageService_Pull_FullMethodName:   operators,
	machine.ImageService_Import_FullMethodName: admins,
	machine.ImageService_Remove_FullMethodName: admins,

	// Sensitive resources are redacted inside the handlers for non-admins.
	// Day-2 operations, with Talos's roles.
	machine.MachineService_NetworkDeviceStats_FullMethodName:            readers,
	machine.MachineService_Netstat_FullMethodName:                       readers,
	machine.MachineService_DiskUsage_FullMethodName:                     readers,
	timeapi.TimeService_Time_FullMethodName:                             readers,
	timeapi.TimeService_TimeCheck_FullMethodName:                        readers,
	inspect.InspectService_ControllerRuntimeDependencies_FullMethodName: readers,
	machine.MachineService_Restart_FullMethodName:                       operators,
	machine.MachineService_PacketCapture_FullMethodName:                 operators,
	storage.StorageService_BlockDeviceWipe_FullMethodName:               admins,

	resource.ResourceService_Get_FullMethodName:         readers,
	resource.ResourceService_List_FullMethodName:        readers,
	resource.ResourceService_Watch_FullMethodName:       readers,
	resource.ResourceService_Definitions_FullMethodName: readers,
}

// allowed reports whether any of roles may call method.
func allowed(method string, roles []role.Role) bool {
	permitted, ok := methodRoles[method]
	if !ok {
		return false
	}

	return slices.ContainsFunc(roles, func(r role.Role) bool { return slices.Contains(permitted, r) })
}

// parseRoles keeps the known roles among names, without duplicates.
func parseRoles(names []string) []role.Role {
	var out []role.Role

	for _, n := range names {
		r := role.Role(n)
		if slices.Contains(role.Known, r) && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}

	return out
}
