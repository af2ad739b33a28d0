package machine

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

// secureBootVar is the UEFI global variable SecureBoot: 4 bytes of
// attributes, then 1 when the firmware enforces Secure Boot.
const secureBootVar = "firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-e0cb4e1c2b8c"

// SecurityStateController publishes Talos's SecurityState from what the
// firmware and the kernel report: the SecureBoot EFI variable, SELinux's
// enforce switch, the module signature parameter and fips_enabled.
// talosbox boots GRUB, never a UKI, so it never has UKI or PCR signing
// keys. All of it is fixed at boot, so it is read once.
type SecurityStateController struct {
	// SysRoot and ProcRoot are sysfs and procfs (/sys, /proc when empty).
	SysRoot, ProcRoot string
}

func (*SecurityStateController) Name() string { return "runtime.SecurityStateController" }

func (*SecurityStateController) Inputs() []bus.Input { return nil }

func (*SecurityStateController) Outputs() []bus.Output {
	return []bus.Output{{Type: runtime.SecurityStateType}}
}

func (c *SecurityStateController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	want := map[string]runtime.SecurityStateSpec{runtime.SecurityStateID: ReadSecurityState(c.SysRoot, c.ProcRoot)}
	if err := bus.SyncOutputs(ctx, r, c.Name(), runtime.NamespaceRuntime, runtime.SecurityStateType, want); err != nil {
		return err
	}

	<-ctx.Done()

	return nil
}

// ReadSecurityState reads the state from sysfs and procfs.
func ReadSecurityState(sysRoot, procRoot string) runtime.SecurityStateSpec {
	if sysRoot == "" {
		sysRoot = "/sys"
	}

	if procRoot == "" {
		procRoot = "/proc"
	}

	read := func(path string) (string, bool) {
		b, err := os.ReadFile(path)
		return strings.TrimSpace(string(b)), err == nil
	}

	var s runtime.SecurityStateSpec

	if b, err := os.ReadFile(filepath.Join(sysRoot, secureBootVar)); err == nil && len(b) == 5 {
		s.SecureBoot = b[4] == 1
	}

	s.SELinuxState = "disabled"
	if v, ok := read(filepath.Join(sysRoot, "fs/selinux/enforce")); ok {
		s.SELinuxState = map[bool]string{true: "enforcing", false: "permissive"}[v == "1"]
	}

	if v, _ := read(filepath.Join(sysRoot, "module/module/parameters/sig_enforce")); v == "Y" {
		s.ModuleSignatureEnforced = true
	}

	s.FIPSState = "disabled"
	if v, _ := read(filepath.Join(procRoot, "sys/crypto/fips_enabled")); v == "1" {
		s.FIPSState = "enabled"
	}

	return s
}
