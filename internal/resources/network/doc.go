// Package network holds networkd's resources: the layered specs it merges, the status it reads back from the kernel, and the node's addresses, hostname, resolvers and time servers, with Talos's type names, namespaces and
// IDs. Producers and consumers both import it.
package network
