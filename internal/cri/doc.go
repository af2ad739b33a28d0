// Package cri is a node's container runtime: the two containerd daemons
// it runs, the way Talos runs them, the system instance (services, the
// installer) and the CRI instance (Kubernetes), with the configuration
// they read and registryd, the image cache their mirrors may point at.
//
// The renderers (SystemConfig, CRIConfig, BasePart, RegistriesPart,
// RegistryHosts, MergePartData) are pure, so the offline render and
// validation share them; SyncTree and MergeParts only touch the
// directories they are given. Containerd lays the runtime out under a
// Runtime's paths, renders its config and makes the two services;
// RegistryController renders the registry config again whenever the
// machine config changes. machined wires these in and decides when they
// run. The CRI settings are TOML parts in /etc/cri/conf.d, merged in name
// order into the cri.toml the CRI instance imports:
//
//	00-base.part           BasePart: the node's CRI defaults
//	01-registries.part     RegistriesPart: hosts tree path and credentials
//	20-customization.part  the user's, given in machine.files
//
// Registry mirrors and TLS live in containerd's hosts tree (config_path),
// which RegistryHosts renders and SyncTree writes, with the hosts files
// machine.files gives under UserHostsDir. The machine.files the CRI reads
// are its own to render (OwnsMachineFile), not internal/userfiles' to
// write: they land where this node's containerd reads them and go with
// the config that gave them. The merge is checked with containerd's own
// code (validation) before anything is written, and the CRI service is
// healthy only when containerd's CRI plugins loaded.
package cri
