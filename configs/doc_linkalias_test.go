package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

const linkAliasConfigDoc = `apiVersion: v1alpha1
kind: LinkAliasConfig
name: net0
selector:
  match: mac(link.permanent_addr) == "00:1a:2b:3c:4d:5e"
`

const linkAliasRefused = `talosbox does not implement LinkAliasConfig yet (link aliases chosen by a CEL selector): name the link by its kernel name in the documents that configure it (machine.network.interfaces[].deviceSelector selects a link by its hardware address, bus path or driver)`

func TestLinkAliasConfig(t *testing.T) {
	t.Parallel()

	runNetDocCases(t, []netDocCase{
		{
			name: "refused: no CEL, no alias names",
			docs: linkAliasConfigDoc,
			errs: []string{`LinkAliasConfig["net0"]: ` + linkAliasRefused},
		},
		{
			name:      "unknown field",
			docs:      "apiVersion: v1alpha1\nkind: LinkAliasConfig\nname: net0\nselector:\n  expr: x\n",
			decodeErr: `unknown field "expr" in LinkAliasConfig["net0"].selector`,
		},
		{
			name:      "wrong type",
			docs:      "apiVersion: v1alpha1\nkind: LinkAliasConfig\nname: net0\nselector: x\n",
			decodeErr: `LinkAliasConfig["net0"].selector: expected a mapping, got`,
		},
		{
			name: "Talos's rules too",
			docs: "apiVersion: v1alpha1\nkind: LinkAliasConfig\nname: net%s\n",
			errs: []string{
				`LinkAliasConfig["net%s"].name: name "net%s" contains an invalid format verb, use %d suffix`,
				`LinkAliasConfig["net%s"].selector.match: link selector is required`,
				`LinkAliasConfig["net%s"]: ` + linkAliasRefused,
			},
		},
	})
}

func TestLinkAliasConfigRoundTripAndPatches(t *testing.T) {
	t.Parallel()

	checkNetDocRoundTrip(t, linkAliasConfigDoc)

	checkNetDocPatch(t, linkAliasConfigDoc, "apiVersion: v1alpha1\nkind: LinkAliasConfig\nname: net0\nselector:\n  match: link.driver == \"e1000\"\n",
		func(t *testing.T, cfg *configs.Config) {
			if d := netDoc[*configs.LinkAliasConfig](t, cfg); d.Selector.Match != `link.driver == "e1000"` {
				t.Errorf("after the strategic merge patch: %+v", d.Selector)
			}
		})

	checkNetDocPatch(t, linkAliasConfigDoc, `[{"op": "remove", "path": "/LinkAliasConfig/net0"}]`,
		func(t *testing.T, cfg *configs.Config) {
			if _, err := cfg.Validate(configs.ModeMetal); err != nil {
				t.Errorf("without the document: %v", err)
			}
		})
}
