package hardware_test

import (
	"reflect"
	"regexp"
	"slices"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources"
	"github.com/talosbox/talosbox/internal/resources/hardware"
)

// TestDefinitions: the names users type resolve to the hardware types
// next to every other type a node registers, as they do in Talos.
func TestDefinitions(t *testing.T) {
	reg := bus.NewRegistry()

	for _, d := range resources.Definitions() {
		if err := reg.Register(d); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct {
		typ   string
		names []string
	}{
		{"Processors.hardware.talos.dev", []string{"Processors.hardware.talos.dev", "processors", "processor", "cpus", "cpu", "CPU"}},
		{"MemoryModules.hardware.talos.dev", []string{"MemoryModules.hardware.talos.dev", "memorymodules", "memorymodule", "ram", "mm"}},
		{"SystemInformations.hardware.talos.dev", []string{"SystemInformations.hardware.talos.dev", "systeminformations", "systeminformation", "si"}},
	} {
		for _, name := range tc.names {
			d, err := reg.Lookup(name)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}

			if d.Type != tc.typ || d.DefaultNamespace != "hardware" {
				t.Errorf("%s resolves to %s in %s, want %s in hardware", name, d.Type, d.DefaultNamespace, tc.typ)
			}
		}
	}
}

// filled is a spec with every field set, so none is omitted.
func filled[S any]() any {
	var s S

	v := reflect.ValueOf(&s).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i); f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Uint32:
			f.SetUint(1)
		default:
			panic("unexpected field kind " + f.Kind().String())
		}
	}

	return s
}

var jsonPath = regexp.MustCompile(`^\{\.([A-Za-z]+)\}$`)

// TestSpecKeys pins Talos's spec keys and checks every print column
// reads one of them.
func TestSpecKeys(t *testing.T) {
	specs := map[string]struct {
		spec any
		keys []string
	}{
		hardware.ProcessorType: {
			filled[hardware.ProcessorSpec](),
			[]string{"socket", "manufacturer", "productName", "maxSpeedMhz", "bootSpeedMhz", "status", "serialNumber", "assetTag", "partNumber", "coreCount", "coreEnabled", "threadCount"},
		},
		hardware.MemoryModuleType: {
			filled[hardware.MemoryModuleSpec](),
			[]string{"sizeMiB", "deviceLocator", "bankLocator", "speed", "manufacturer", "serialNumber", "assetTag", "productName"},
		},
		hardware.SystemInformationType: {
			filled[hardware.SystemInformationSpec](),
			[]string{"manufacturer", "productName", "version", "biosVersion", "serialnumber", "uuid", "wakeUpType", "skuNumber"},
		},
	}

	for _, d := range hardware.Definitions {
		s, ok := specs[d.Type]
		if !ok {
			t.Errorf("%s: no spec known", d.Type)
			continue
		}

		out, err := yaml.Marshal(s.spec)
		if err != nil {
			t.Fatal(err)
		}

		var node yaml.Node
		if err := yaml.Unmarshal(out, &node); err != nil {
			t.Fatal(err)
		}

		var keys []string
		for i, n := range node.Content[0].Content {
			if i%2 == 0 {
				keys = append(keys, n.Value)
			}
		}

		if !reflect.DeepEqual(keys, s.keys) {
			t.Errorf("%s keys %v, want %v", d.Type, keys, s.keys)
		}

		for _, c := range d.PrintColumns {
			m := jsonPath.FindStringSubmatch(c.JSONPath)
			if m == nil || !slices.Contains(keys, m[1]) {
				t.Errorf("%s column %s reads %s, not a spec key", d.Type, c.Name, c.JSONPath)
			}
		}

		// Empty fields are left out, as Talos leaves them.
		if empty, _ := yaml.Marshal(reflect.Zero(reflect.TypeOf(s.spec)).Interface()); string(empty) != "{}\n" {
			t.Errorf("%s: empty spec is %q", d.Type, empty)
		}
	}
}
