package runtime

import (
	"time"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
)

// The type's name and IDs, as Talos has them.
const (
	ConfigLoadErrorType = "ConfigLoadErrors.runtime.talos.dev"
	// LastLoadErrorID and BootErrorID name the ConfigLoadErrors.
	LastLoadErrorID = "last"
	BootErrorID     = "boot"
)

// ConfigLoadErrorSpec records why a config was refused. ID "last" is the
// last config refused as invalid (at load or by an apply in maintenance
// mode); ID "boot" is the last config the node refused to boot (a boot
// task failed, or a persisted config no longer validates) and what it did
// instead: that one is kept on STATE (config-fallback.yaml) and shown
// again after every boot until the same config boots to running.
type ConfigLoadErrorSpec struct {
	Source string    `yaml:"source"`
	Error  string    `yaml:"error"`
	Time   time.Time `yaml:"time"`
	// Phase and Task name the boot step that failed.
	Phase string `yaml:"phase,omitempty"`
	Task  string `yaml:"task,omitempty"`
	// Action says what the node did instead of booting the config.
	Action string `yaml:"action,omitempty"`
	// FailedConfigPath is where STATE keeps the refused config.
	FailedConfigPath string `yaml:"failedConfigPath,omitempty"`
	// FailedConfig is the refused config as it was applied (redacted when
	// the node fell back to maintenance mode, see Node.fallBack).
	FailedConfig string `yaml:"failedConfig,omitempty"`
}

// RedactedYAML is the record as a client without os:admin sees it: the
// failed config's secrets masked, as `get mc` masks them; a config that
// does not even decode is left out.
func (s ConfigLoadErrorSpec) RedactedYAML() ([]byte, error) {
	if s.FailedConfig != "" {
		cfg, err := configs.Decode([]byte(s.FailedConfig))
		if err != nil {
			s.FailedConfig = ""
		} else {
			red, err := cfg.EncodeRedacted()
			if err != nil {
				return nil, err
			}

			s.FailedConfig = string(red)
		}
	}

	return yaml.Marshal(s)
}

// ConfigLoadError is the resource type of the last refused config.
type ConfigLoadError = bus.Typed[ConfigLoadErrorSpec]
