package configs

import "time"

// FilesystemTrimConfig is Talos's FilesystemTrimConfig (written by gen
// config since Talos 1.14, every week): how often the node trims
// (FITRIM) the filesystems of its volumes, so that the disk under them
// learns which blocks are free. On talosbox that is EPHEMERAL, as on
// Talos; internal/storage's TrimController reads the document.
type FilesystemTrimConfig struct {
	Interval time.Duration `yaml:"interval,omitempty"`
}

// Kind implements Document.
func (*FilesystemTrimConfig) Kind() string { return "FilesystemTrimConfig" }

func (t *FilesystemTrimConfig) check(v *validator, path string) {
	if t.Interval < 0 {
		v.errorf(path+".interval", "interval cannot be negative: write how often to trim, such as 168h")
	}
}

func (*FilesystemTrimConfig) fold(*folding) {}

// TrimInterval is how often the system volume name is trimmed, 0 for
// never, as Talos resolves it: FilesystemTrimConfig's interval, which a
// VolumeConfig's trim section overrides (present, it turns trimming on
// unless it says enabled: false).
func TrimInterval(c *Config, name string) time.Duration {
	var interval time.Duration

	if t := DocumentOf[*FilesystemTrimConfig](c); t != nil {
		interval = t.Interval
	}

	enabled := interval > 0

	if vc := SystemVolumeConfig(c, name); vc != nil && vc.Trim != nil {
		enabled = vc.Trim.Enabled == nil || *vc.Trim.Enabled

		if vc.Trim.Interval > 0 {
			interval = vc.Trim.Interval
		}
	}

	if !enabled || interval <= 0 {
		return 0
	}

	return interval
}
