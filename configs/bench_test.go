package configs_test

import (
	"os"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

// BenchmarkDecodeValidate measures the whole path a config takes on apply:
// strict decode and full validation of a ~300-line control-plane config.
func BenchmarkDecodeValidate(b *testing.B) {
	data, err := os.ReadFile("testdata/full/controlplane.yaml")
	if err != nil {
		b.Fatal(err)
	}

	b.ReportAllocs()
	b.SetBytes(int64(len(data)))

	for b.Loop() {
		cfg, err := configs.Decode(data)
		if err != nil {
			b.Fatal(err)
		}

		if _, err := cfg.Validate(configs.ModeMetal); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	data, err := os.ReadFile("testdata/full/controlplane.yaml")
	if err != nil {
		b.Fatal(err)
	}

	cfg, err := configs.Decode(data)
	if err != nil {
		b.Fatal(err)
	}

	b.ReportAllocs()

	for b.Loop() {
		if _, err := cfg.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}
