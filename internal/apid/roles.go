package apid

import (
	"slices"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/resource"
)

// Role is one Talos API role, carried as an organization of the client
// certificate's subject.
type Role string

// Roles, as Talos names them.
const (
	RoleAdmin      Role = "os:admin"
	RoleOperator   Role = "os:operator"
	RoleReader     Role = "os:reader"
	RoleEtcdBackup Role = "os:etcd:backup"
	// RoleMetaWriter may write and delete META keys and nothing else (the
	// Talos dashboard's role).
	RoleMetaWriter Role = "os:meta:writer"
	// RoleImpersonator is apid's own, for forwarding calls to other nodes:
	// a peer holding it is authorized with the roles it forwards.
	RoleImpersonator Role = "os:impersonator"
)

// knownRoles are the roles a certificate may carry; others are ignored.
var knownRoles = []Role{RoleAdmin, RoleOperator, RoleReader, RoleEtcdBackup, RoleMetaWriter, RoleImpersonator}

// Sets of roles the table is written with.
var (
	readers   = []Role{RoleAdmin, RoleOperator, RoleReader}
	operators = []Role{RoleAdmin, RoleOperator}
	admins    = []Role{RoleAdmin}
)

// methodRoles is the one place that says who may call what. Every RPC the
// server registers must be here (a test walks the service descriptors);
// a method missing from it is denied to everyone. Readers read, but not
// file contents (Read, Copy) and never secrets; operators add the
// lifecycle of services and of the node, and image pulls; the rest is
// for admins.
var methodRoles = map[string][]Role{
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
	machine.MachineService_EtcdSnapshot_FullMethodName: {RoleAdmin, RoleOperator, RoleEtcdBackup},

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
	machine.MachineService_MetaWrite_FullMethodName:  {RoleAdmin, RoleMetaWriter},
	machine.MachineService_MetaDelete_FullMethodName: {RoleAdmin, RoleMetaWriter},

	// Sensitive resources are redacted inside the handlers for non-admins.
	resource.ResourceService_Get_FullMethodName:         readers,
	resource.ResourceService_List_FullMethodName:        readers,
	resource.ResourceService_Watch_FullMethodName:       readers,
	resource.ResourceService_Definitions_FullMethodName: readers,
}

// allowed reports whether any of roles may call method.
func allowed(method string, roles []Role) bool {
	permitted, ok := methodRoles[method]
	if !ok {
		return false
	}

	return slices.ContainsFunc(roles, func(r Role) bool { return slices.Contains(permitted, r) })
}

// parseRoles keeps the known roles among names, without duplicates.
func parseRoles(names []string) []Role {
	var out []Role

	for _, n := range names {
		r := Role(n)
		if slices.Contains(knownRoles, r) && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}

	return out
}

func hasRole(roles []Role, r Role) bool { return slices.Contains(roles, r) }

func roleStrings(roles []Role) []string {
	out := make([]string, len(roles))
	for i, r := range roles {
		out[i] = string(r)
	}

	return out
}
