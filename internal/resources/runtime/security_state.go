package runtime

import "github.com/talosbox/talosbox/internal/bus"

// SecurityStateType is Talos's type (without "runtime." in its name, as
// Talos has it) of the node's boot security, ID SecurityStateID.
const (
	SecurityStateType = "SecurityStates.talos.dev"
	SecurityStateID   = "securitystate"
)

// SecurityStateSpec is what the firmware and the kernel say about how the
// node booted and what it enforces.
type SecurityStateSpec struct {
	SecureBoot               bool   `yaml:"secureBoot"`
	UKISigningKeyFingerprint string `yaml:"ukiSigningKeyFingerprint,omitempty"`
	PCRSigningKeyFingerprint string `yaml:"pcrSigningKeyFingerprint,omitempty"`
	// SELinuxState is disabled, permissive or enforcing.
	SELinuxState string `yaml:"selinuxState,omitempty"`
	// FIPSState is disabled or enabled (the kernel's fips_enabled).
	FIPSState               string `yaml:"fipsState,omitempty"`
	BootedWithUKI           bool   `yaml:"bootedWithUKI,omitempty"`
	ModuleSignatureEnforced bool   `yaml:"moduleSignatureEnforced,omitempty"`
}

// SecurityState is a SecurityStates resource.
type SecurityState = bus.Typed[SecurityStateSpec]
