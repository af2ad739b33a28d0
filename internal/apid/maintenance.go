package apid

import (
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/resources/runtime"
	"github.com/talosbox/talosbox/internal/resources/v1alpha1"
)

// maintenanceMethods are all a node without a config serves, to anyone
// who can reach it (there is no CA to check clients against yet): enough
// to apply a config (`talosctl apply-config --insecure`) and to see that
// the node waits for one.
var maintenanceMethods = map[string]bool{
	machine.MachineService_ApplyConfiguration_FullMethodName: true,
	machine.MachineService_Version_FullMethodName:            true,
	resource.ResourceService_Definitions_FullMethodName:      true,
	resource.ResourceService_Get_FullMethodName:              true,
	resource.ResourceService_List_FullMethodName:             true,
}

// maintenanceTypes are the resource types readable in maintenance mode:
// status only. ConfigLoadErrors stay out, as a refused config's error may
// quote its values.
var maintenanceTypes = map[string]bool{
	runtime.MachineStatusType: true,
	runtime.MachineStageType:  true,
	v1alpha1.ServiceType:      true,
}

const maintenanceDenied = "maintenance mode: only apply-config, version and reading MachineStatuses, MachineStages and Services are served"
