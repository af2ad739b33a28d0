package qemu

import "fmt"

// MAC returns a locally administered unicast address for NIC nic of
// guest node: 52:54:00:00:<node>:<nic>.
func MAC(node, nic int) string {
	return fmt.Sprintf("52:54:00:00:%02x:%02x", node&0xff, nic&0xff)
}
