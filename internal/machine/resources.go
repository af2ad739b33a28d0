// Package machine is the node runtime behind machined: it acquires and
// persists the machine config, runs the lifecycle sequences, supervises
// the services and applies configuration changes. Its state is published
// on the bus as resources, so every other part of the node (and, through
// apid, every client) sees the same thing.
package machine

// Namespaces and resource types owned by the machine runtime.
const (
	// owner of everything the runtime writes directly.
	owner = "machined"
)
