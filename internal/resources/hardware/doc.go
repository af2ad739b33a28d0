// Package hardware holds the hardware resources, what the firmware's
// SMBIOS table says about the machine: its system information, processor
// sockets and memory modules, with Talos's type names, namespace, IDs and
// spec keys. Producers and consumers both import it.
package hardware
