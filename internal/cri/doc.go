// Package cri renders the configuration of the two containerd daemons a
// node runs, the way Talos renders it: the system instance (services, the
// installer) and the CRI instance (Kubernetes).
//
// Everything here is pure except SyncTree and MergeParts, which only touch
// the directories they are given; machined decides where the files go and
// when to restart containerd. The CRI settings are TOML parts in
// /etc/cri/conf.d, merged in name order into the cri.toml the CRI instance
// imports:
//
//	00-base.part           BasePart: the node's CRI defaults
//	01-registries.part     RegistriesPart: hosts tree path and credentials
//	20-customization.part  the user's, through machine.files
//
// Registry mirrors and TLS live in containerd's hosts tree (config_path),
// which RegistryHosts renders and SyncTree writes.
package cri
