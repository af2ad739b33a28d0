// Package block holds the block resources: disks, block devices, what probing found on them, the system disk and the system volumes' state, with Talos's type names, namespaces and
// IDs. Producers and consumers both import it.
package block
