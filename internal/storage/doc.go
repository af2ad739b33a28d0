// Package storage is a node's block storage, as Talos keeps its block and
// volume controllers apart from machined's lifecycle: BlockController
// mirrors the block devices onto the bus, and Volumes finds, makes,
// encrypts (LUKS2, keyed as Talos keys it), mounts and wipes STATE,
// EPHEMERAL and machine.disks, keeps META, and writes BOOT on install and
// upgrade.
//
// It never imports the node runtime: machined builds one Volumes from
// the few things it reads off the node (Options) and its boot, reset and
// upgrade sequences decide when each step runs.
package storage
