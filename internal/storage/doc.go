// Package storage is a node's block storage: the block devices mirrored
// onto the bus (BlockController) and the system disk's LUKS2 encryption,
// keyed as Talos keys it. It never imports the node runtime: machined
// decides when volumes are opened, and this package how.
package storage
