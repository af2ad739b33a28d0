package configs_test

import (
	"reflect"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

const staticHostConfigDoc = `apiVersion: v1alpha1
kind: StaticHostConfig
name: 10.5.0.2
hostnames:
  - example.org
  - example.com
`

func TestStaticHostConfig(t *testing.T) {
	t.Parallel()

	runNetDocCases(t, []netDocCase{
		{
			// Added to machine.network's entries, as Talos lists both.
			name: "folds into extraHostEntries",
			v1:   `machine: {network: {extraHostEntries: [{ip: 10.5.0.1, aliases: [gw.example.org]}]}}`,
			docs: staticHostConfigDoc,
			effective: func(t *testing.T, cfg *configs.Config) {
				want := []configs.ExtraHost{{IP: "10.5.0.1", Aliases: []string{"gw.example.org"}}, {IP: "10.5.0.2", Aliases: []string{"example.org", "example.com"}}}
				if got := cfg.Machine.Network.ExtraHostEntries; !reflect.DeepEqual(got, want) {
					t.Errorf("extraHostEntries = %+v, want %+v", got, want)
				}
			},
		},
		{
			name:      "unknown field",
			docs:      "apiVersion: v1alpha1\nkind: StaticHostConfig\nname: 10.5.0.2\naliases: [a]\n",
			decodeErr: `unknown field "aliases" in StaticHostConfig["10.5.0.2"]`,
		},
		{
			name:      "wrong type",
			docs:      "apiVersion: v1alpha1\nkind: StaticHostConfig\nname: 10.5.0.2\nhostnames: a\n",
			decodeErr: `StaticHostConfig["10.5.0.2"].hostnames: expected a sequence, got`,
		},
		{
			name: "Talos's rules",
			docs: "apiVersion: v1alpha1\nkind: StaticHostConfig\nname: gw\nhostnames: [a]\n---\napiVersion: v1alpha1\nkind: StaticHostConfig\nname: 10.5.0.3\n",
			errs: []string{
				`StaticHostConfig["gw"].name: name must be a valid IP address, got "gw"`,
				`StaticHostConfig["10.5.0.3"].hostnames: at least one hostname is required`,
			},
		},
		{
			// machine.network's alias rule, under the document's name.
			name: "a host name that is not one",
			docs: "apiVersion: v1alpha1\nkind: StaticHostConfig\nname: 10.5.0.2\nhostnames: [ok.example.org, not_ok]\n",
			errs: []string{`StaticHostConfig["10.5.0.2"].hostnames[1]: invalid host alias "not_ok": its label "not_ok" may only hold letters, digits and '-', and must not start or end with '-'`},
		},
	})
}

func TestStaticHostConfigRoundTripAndPatches(t *testing.T) {
	t.Parallel()

	checkNetDocRoundTrip(t, staticHostConfigDoc)

	checkNetDocPatch(t, staticHostConfigDoc, "apiVersion: v1alpha1\nkind: StaticHostConfig\nname: 10.5.0.9\nhostnames: [new.example.org]\n",
		func(t *testing.T, cfg *configs.Config) {
			if got := cfg.Machine.Network.ExtraHostEntries; len(got) != 2 || got[1].IP != "10.5.0.9" {
				t.Errorf("after the strategic merge patch: %+v", got)
			}
		})

	checkNetDocPatch(t, staticHostConfigDoc, `[{"op": "add", "path": "/StaticHostConfig/10.5.0.2/hostnames/-", "value": "example.net"}]`,
		func(t *testing.T, cfg *configs.Config) {
			if got := cfg.Machine.Network.ExtraHostEntries; len(got) != 1 || len(got[0].Aliases) != 3 {
				t.Errorf("after the JSON patch: %+v", got)
			}
		})
}
