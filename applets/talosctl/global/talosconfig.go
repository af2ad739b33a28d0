package global

import "github.com/talosbox/talosbox/internal/talosconfig"

// TalosconfigPath resolves --talosconfig, then $TALOSCONFIG, then
// ~/.talos/config.
func (g *Args) TalosconfigPath() (string, error) {
	return talosconfig.ResolvePath(g.Talosconfig, func(k string) (string, bool) {
		v := g.Env.Getenv(k)
		return v, v != ""
	})
}

// EditTalosconfig loads the talosconfig, lets fn change it and saves it
// atomically; nothing is written when fn fails.
func (g *Args) EditTalosconfig(fn func(*talosconfig.Config) error) error {
	path, err := g.TalosconfigPath()
	if err != nil {
		return err
	}

	cfg, err := talosconfig.Load(path)
	if err != nil {
		return err
	}

	if err := fn(cfg); err != nil {
		return err
	}

	return cfg.Save(path)
}

func (g *Args) LoadTalosconfig() (*talosconfig.Config, error) {
	path, err := g.TalosconfigPath()
	if err != nil {
		return nil, err
	}

	return talosconfig.Load(path)
}
