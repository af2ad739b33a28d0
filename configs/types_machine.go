package configs

import "time"

// MachineConfig is the machine section: everything about this one node.
type MachineConfig struct {
	// Type is init, controlplane or worker.
	Type string `yaml:"type,omitempty"`
	// Token is the trustd token workers present to get their apid certificate.
	Token string `yaml:"token,omitempty"`
	// CA is the Talos API CA; control-plane nodes hold its key to sign
	// certificates, workers only trust it.
	CA *PEMCertificateAndKey `yaml:"ca,omitempty"`
	// AcceptedCAs are trusted in addition to CA, so the CA can be rotated.
	AcceptedCAs              []PEMCertificate           `yaml:"acceptedCAs,omitempty"`
	CertSANs                 []string                   `yaml:"certSANs,omitempty"`
	ControlPlane             *MachineControlPlaneConfig `yaml:"controlPlane,omitempty"`
	Kubelet                  *KubeletConfig             `yaml:"kubelet,omitempty"`
	Pods                     []Unstructured             `yaml:"pods,omitempty"`
	Network                  *NetworkConfig             `yaml:"network,omitempty"`
	Disks                    []MachineDisk              `yaml:"disks,omitempty"`
	Install                  *InstallConfig             `yaml:"install,omitempty"`
	Files                    []MachineFile              `yaml:"files,omitempty"`
	Env                      map[string]string          `yaml:"env,omitempty"`
	Time                     *TimeConfig                `yaml:"time,omitempty"`
	Sysctls                  map[string]string          `yaml:"sysctls,omitempty"`
	Sysfs                    map[string]string          `yaml:"sysfs,omitempty"`
	Registries               *RegistriesConfig          `yaml:"registries,omitempty"`
	SystemDiskEncryption     *SystemDiskEncryption      `yaml:"systemDiskEncryption,omitempty"`
	Features                 *FeaturesConfig            `yaml:"features,omitempty"`
	Udev                     *UdevConfig                `yaml:"udev,omitempty"`
	Logging                  *LoggingConfig             `yaml:"logging,omitempty"`
	Kernel                   *KernelConfig              `yaml:"kernel,omitempty"`
	SeccompProfiles          []SeccompProfile           `yaml:"seccompProfiles,omitempty"`
	BaseRuntimeSpecOverrides Unstructured               `yaml:"baseRuntimeSpecOverrides,omitempty"`
	NodeLabels               map[string]string          `yaml:"nodeLabels,omitempty"`
	NodeAnnotations          map[string]string          `yaml:"nodeAnnotations,omitempty"`
	// NodeTaints maps a taint key to "value:Effect" (or just "Effect").
	NodeTaints map[string]string `yaml:"nodeTaints,omitempty"`
}

// MachineControlPlaneConfig turns off control-plane components on this node.
type MachineControlPlaneConfig struct {
	ControllerManager *DisabledToggle `yaml:"controllerManager,omitempty"`
	Scheduler         *DisabledToggle `yaml:"scheduler,omitempty"`
}

// DisabledToggle is a section whose only setting switches a component off.
type DisabledToggle struct {
	Disabled bool `yaml:"disabled,omitempty"`
}

// KubeletConfig configures the kubelet on this node.
type KubeletConfig struct {
	Image                    string       `yaml:"image,omitempty"`
	ClusterDNS               []string     `yaml:"clusterDNS,omitempty"`
	ExtraArgs                Args         `yaml:"extraArgs,omitempty"`
	ExtraMounts              []ExtraMount `yaml:"extraMounts,omitempty"`
	ExtraConfig              Unstructured `yaml:"extraConfig,omitempty"`
	CredentialProviderConfig Unstructured `yaml:"credentialProviderConfig,omitempty"`
	// DefaultRuntimeSeccompProfileEnabled makes RuntimeDefault the default
	// seccomp profile of every pod.
	DefaultRuntimeSeccompProfileEnabled bool           `yaml:"defaultRuntimeSeccompProfileEnabled,omitempty"`
	RegisterWithFQDN                    bool           `yaml:"registerWithFQDN,omitempty"`
	NodeIP                              *KubeletNodeIP `yaml:"nodeIP,omitempty"`
	SkipNodeRegistration                bool           `yaml:"skipNodeRegistration,omitempty"`
	DisableManifestsDirectory           bool           `yaml:"disableManifestsDirectory,omitempty"`
}

// KubeletNodeIP picks the node IP among the node's addresses.
type KubeletNodeIP struct {
	// ValidSubnets are CIDRs; a leading "!" excludes the subnet.
	ValidSubnets []string `yaml:"validSubnets,omitempty"`
}

// ExtraMount is a bind mount into the kubelet container.
type ExtraMount struct {
	Destination string   `yaml:"destination,omitempty"`
	Type        string   `yaml:"type,omitempty"`
	Source      string   `yaml:"source,omitempty"`
	Options     []string `yaml:"options,omitempty"`
}

// MachineDisk is an extra disk partitioned and mounted at boot.
type MachineDisk struct {
	Device     string          `yaml:"device,omitempty"`
	Partitions []DiskPartition `yaml:"partitions,omitempty"`
}

// DiskPartition is one partition of a MachineDisk. Size is kept as written
// ("100 GB" or a byte count); zero or empty means the rest of the disk.
type DiskPartition struct {
	Size       string `yaml:"size,omitempty"`
	MountPoint string `yaml:"mountpoint,omitempty"`
}

// InstallConfig says where and what to install on metal.
type InstallConfig struct {
	Disk              string               `yaml:"disk,omitempty"`
	DiskSelector      *InstallDiskSelector `yaml:"diskSelector,omitempty"`
	ExtraKernelArgs   []string             `yaml:"extraKernelArgs,omitempty"`
	Image             string               `yaml:"image,omitempty"`
	Extensions        []InstallExtension   `yaml:"extensions,omitempty"`
	Bootloader        *bool                `yaml:"bootloader,omitempty"`
	Wipe              bool                 `yaml:"wipe,omitempty"`
	LegacyBIOSSupport bool                 `yaml:"legacyBIOSSupport,omitempty"`
	GrubUseUKICmdline *bool                `yaml:"grubUseUKICmdline,omitempty"`
}

// InstallDiskSelector picks the install disk by its properties when device
// names are not stable.
type InstallDiskSelector struct {
	// Size is a size with an optional comparison, e.g. ">= 1TB" or "4GB".
	Size     string `yaml:"size,omitempty"`
	Name     string `yaml:"name,omitempty"`
	Model    string `yaml:"model,omitempty"`
	Serial   string `yaml:"serial,omitempty"`
	Modalias string `yaml:"modalias,omitempty"`
	UUID     string `yaml:"uuid,omitempty"`
	WWID     string `yaml:"wwid,omitempty"`
	// Type is ssd, hdd, nvme or sd.
	Type    string `yaml:"type,omitempty"`
	BusPath string `yaml:"busPath,omitempty"`
}

// InstallExtension is a system extension image installed with the OS.
type InstallExtension struct {
	Image string `yaml:"image,omitempty"`
}

// MachineFile is a file written at boot.
type MachineFile struct {
	Content     string   `yaml:"content,omitempty"`
	Permissions FileMode `yaml:"permissions,omitempty"`
	Path        string   `yaml:"path,omitempty"`
	// Op is create, append or overwrite.
	Op string `yaml:"op,omitempty"`
}

// TimeConfig configures time sync.
type TimeConfig struct {
	Disabled    bool          `yaml:"disabled,omitempty"`
	Servers     []string      `yaml:"servers,omitempty"`
	BootTimeout time.Duration `yaml:"bootTimeout,omitempty"`
}

// RegistriesConfig redirects and authenticates image pulls.
type RegistriesConfig struct {
	// Mirrors maps a registry host ("docker.io", or "*" for all) to mirrors.
	Mirrors map[string]RegistryMirror `yaml:"mirrors,omitempty"`
	// Config maps a registry host (or mirror host) to TLS and auth settings.
	Config map[string]RegistryConfig `yaml:"config,omitempty"`
}

// RegistryMirror lists the endpoints tried instead of the registry itself.
type RegistryMirror struct {
	Endpoints    []string `yaml:"endpoints,omitempty"`
	OverridePath bool     `yaml:"overridePath,omitempty"`
	SkipFallback bool     `yaml:"skipFallback,omitempty"`
}

// RegistryConfig holds TLS and auth settings for one registry host.
type RegistryConfig struct {
	TLS  *RegistryTLS  `yaml:"tls,omitempty"`
	Auth *RegistryAuth `yaml:"auth,omitempty"`
}

// RegistryTLS configures TLS to a registry.
type RegistryTLS struct {
	InsecureSkipVerify bool                  `yaml:"insecureSkipVerify,omitempty"`
	ClientIdentity     *PEMCertificateAndKey `yaml:"clientIdentity,omitempty"`
	CA                 Base64                `yaml:"ca,omitempty"`
}

// RegistryAuth holds registry credentials, in the forms containerd accepts.
type RegistryAuth struct {
	Username      string `yaml:"username,omitempty"`
	Password      string `yaml:"password,omitempty"`
	Auth          string `yaml:"auth,omitempty"`
	IdentityToken string `yaml:"identityToken,omitempty"`
}

// SystemDiskEncryption encrypts the STATE and EPHEMERAL partitions.
type SystemDiskEncryption struct {
	State     *EncryptionConfig `yaml:"state,omitempty"`
	Ephemeral *EncryptionConfig `yaml:"ephemeral,omitempty"`
}

// EncryptionConfig is LUKS2 encryption of one partition.
type EncryptionConfig struct {
	// Provider is luks2, the only one.
	Provider  string          `yaml:"provider,omitempty"`
	Keys      []EncryptionKey `yaml:"keys,omitempty"`
	Cipher    string          `yaml:"cipher,omitempty"`
	KeySize   uint            `yaml:"keySize,omitempty"`
	BlockSize uint64          `yaml:"blockSize,omitempty"`
	Options   []string        `yaml:"options,omitempty"`
}

// EncryptionKey is one LUKS2 key slot. Exactly one kind must be set.
type EncryptionKey struct {
	Static *EncryptionKeyStatic `yaml:"static,omitempty"`
	NodeID *EncryptionKeyNodeID `yaml:"nodeID,omitempty"`
	KMS    *EncryptionKeyKMS    `yaml:"kms,omitempty"`
	TPM    *EncryptionKeyTPM    `yaml:"tpm,omitempty"`
	Slot   int                  `yaml:"slot"`
	// LockToState binds the key to the STATE partition's salt.
	LockToState bool `yaml:"lockToState,omitempty"`
}

// EncryptionKeyStatic is a passphrase kept in the config.
type EncryptionKeyStatic struct {
	Passphrase string `yaml:"passphrase,omitempty"`
}

// EncryptionKeyNodeID derives the key from the node UUID and partition label;
// it has no settings, its presence selects the kind.
type EncryptionKeyNodeID struct{}

// EncryptionKeyKMS seals the key with a remote KMS.
type EncryptionKeyKMS struct {
	Endpoint string `yaml:"endpoint,omitempty"`
}

// EncryptionKeyTPM seals the key with the TPM.
type EncryptionKeyTPM struct {
	CheckSecurebootStatusOnEnroll *bool `yaml:"checkSecurebootStatusOnEnroll,omitempty"`
}

// UdevConfig adds udev rules.
type UdevConfig struct {
	Rules []string `yaml:"rules,omitempty"`
}

// LoggingConfig sends service logs elsewhere.
type LoggingConfig struct {
	Destinations []LoggingDestination `yaml:"destinations,omitempty"`
}

// LoggingDestination is one log sink: a tcp:// or udp:// endpoint.
type LoggingDestination struct {
	Endpoint  string            `yaml:"endpoint,omitempty"`
	Format    string            `yaml:"format,omitempty"`
	ExtraTags map[string]string `yaml:"extraTags,omitempty"`
}

// KernelConfig loads kernel modules at boot.
type KernelConfig struct {
	Modules []KernelModule `yaml:"modules,omitempty"`
}

// KernelModule is a module name with its parameters ("key=value").
type KernelModule struct {
	Name       string   `yaml:"name,omitempty"`
	Parameters []string `yaml:"parameters,omitempty"`
}

// SeccompProfile is written to the kubelet seccomp directory under Name.
type SeccompProfile struct {
	Name  string       `yaml:"name,omitempty"`
	Value Unstructured `yaml:"value,omitempty"`
}
