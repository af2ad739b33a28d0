package cri

import (
	"bytes"
	"slices"

	"github.com/pelletier/go-toml/v2"
)

// InstanceOptions place one containerd daemon.
type InstanceOptions struct {
	// Root and State are containerd's persistent and runtime directories;
	// empty leaves containerd's defaults (/var/lib/containerd,
	// /run/containerd).
	Root, State string
	// Socket is the gRPC address; the ttrpc socket is derived from it.
	Socket string
	// Imports are further config files; the CRI instance imports the
	// merged cri.toml. The system instance imports nothing.
	Imports []string
}

// configVersion is the containerd config version written, Talos's.
// containerd 2.4 reads up to version 4 and migrates a version 3 file when
// it starts (logging a warning): [grpc] address becomes the
// io.containerd.server.v1.grpc plugin's, and the ttrpc socket is derived
// from it. Version 4 would have to name both sockets in those plugin
// sections instead.
const configVersion = 3

// Plugins neither instance loads.
var commonDisabled = []string{
	// erofs needs a kernel and mkfs.erofs the node does not have, and
	// blockfile a scratch image nobody configures; left enabled they only
	// log failures at every start.
	"io.containerd.differ.v1.erofs",
	"io.containerd.mount-handler.v1.erofs",
	"io.containerd.snapshotter.v1.blockfile",
	"io.containerd.snapshotter.v1.erofs",
	// Tracing has no collector to send to.
	"io.containerd.internal.v1.tracing",
	"io.containerd.tracing.processor.v1.otlp",
	"io.containerd.ttrpc.v1.otelttrpc",
	// /opt/containerd is for plugins' binaries, which a node has none of;
	// on a read-only root it only fails at every start.
	"io.containerd.internal.v1.opt",
}

// Plugins the system instance also leaves out: it runs services and the
// installer, never pods, so the CRI, sandboxes and NRI would only take
// memory and sockets.
var systemOnlyDisabled = []string{
	pluginCRIImages,
	pluginCRIRuntime,
	pluginCRIGRPC,
	pluginNRI,
	"io.containerd.grpc.v1.sandbox-controllers",
	"io.containerd.grpc.v1.sandboxes",
	"io.containerd.monitor.container.v1.restart",
	"io.containerd.podsandbox.controller.v1.podsandbox",
	"io.containerd.sandbox.controller.v1.shim",
	"io.containerd.sandbox.store.v1.local",
}

// SystemDisabledPlugins is the sorted disabled_plugins of the system
// instance.
func SystemDisabledPlugins() []string {
	return slices.Sorted(slices.Values(append(slices.Clone(commonDisabled), systemOnlyDisabled...)))
}

// CRIDisabledPlugins is the sorted disabled_plugins of the CRI instance.
func CRIDisabledPlugins() []string {
	return slices.Sorted(slices.Values(slices.Clone(commonDisabled)))
}

type instanceConfig struct {
	Version         int         `toml:"version"`
	Root            string      `toml:"root,omitempty"`
	State           string      `toml:"state,omitempty"`
	DisabledPlugins []string    `toml:"disabled_plugins"`
	Imports         []string    `toml:"imports,omitempty"`
	GRPC            grpcConfig  `toml:"grpc,omitempty"`
	Debug           debugConfig `toml:"debug"`
}

type grpcConfig struct {
	Address string `toml:"address,omitempty"`
}

type debugConfig struct {
	Level string `toml:"level"`
}

// SystemConfig renders the config of the system containerd
// (/etc/containerd/config.toml on Talos).
func SystemConfig(o InstanceOptions) []byte {
	return instance(o, SystemDisabledPlugins())
}

// CRIConfig renders the config of the CRI containerd
// (/etc/cri/containerd.toml on Talos). The CRI settings themselves are in
// the imported cri.toml, which MergeParts writes.
func CRIConfig(o InstanceOptions) []byte {
	return instance(o, CRIDisabledPlugins())
}

func instance(o InstanceOptions, disabled []string) []byte {
	c := instanceConfig{
		Version:         configVersion,
		Root:            o.Root,
		State:           o.State,
		DisabledPlugins: disabled,
		Imports:         o.Imports,
		GRPC:            grpcConfig{Address: o.Socket},
		// containerd's log level, as on Talos: debug would log every CRI
		// call the kubelet makes.
		Debug: debugConfig{Level: "info"},
	}

	var buf bytes.Buffer

	if err := toml.NewEncoder(&buf).SetIndentTables(true).SetArraysMultiline(true).Encode(c); err != nil {
		// Strings and string lists only: cannot fail.
		panic(err)
	}

	return buf.Bytes()
}
