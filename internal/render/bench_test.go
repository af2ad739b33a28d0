package render_test

import (
	"os"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/render"
)

// BenchmarkCheck is what every validation path (validate, apply, boot)
// adds to configs.Validate; its budget is well under 50 ms a config.
func BenchmarkCheck(b *testing.B) {
	cp, worker := gen(b)

	for _, bc := range []struct {
		name string
		cfg  *configs.Config
		mode configs.Mode
	}{
		{"controlplane/metal", cp, configs.ModeMetal},
		{"controlplane/container", cp, configs.ModeContainer},
		{"worker/container", worker, configs.ModeContainer},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if err := render.Check(bc.cfg, bc.mode); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRender is a full render, secrets redacted and index written.
func BenchmarkRender(b *testing.B) {
	cp, _ := gen(b)

	for b.Loop() {
		if _, err := render.Render(cp, render.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad is the one validation every apply and boot runs on a
// ~300-line control-plane config: decode with positions, configs' rules,
// then the renderers.
func BenchmarkLoad(b *testing.B) {
	data, err := os.ReadFile("../../configs/testdata/full/controlplane.yaml")
	if err != nil {
		b.Fatal(err)
	}

	b.ReportAllocs()

	for b.Loop() {
		if _, _, err := render.Load(data, configs.ModeMetal); err != nil {
			b.Fatal(err)
		}
	}
}
