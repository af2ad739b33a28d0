package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

const extServiceDoc = `apiVersion: v1alpha1
kind: ExtensionServiceConfig
name: nut-client
configFiles:
    - content: MONITOR ${upsmonHost} 1 remote username password
      mountPath: /usr/local/etc/nut/upsmon.conf
environment:
    - NUT_UPS=upsname
`

const extServiceRefused = `line +2: ExtensionServiceConfig["nut-client"]: talosbox does not run extension services yet: there is no service "nut-client" to configure (remove the document)`

func TestExtensionServiceConfig(t *testing.T) {
	t.Parallel()

	obsDecode(t, []obsDecodeCase{
		{name: "good", docs: extServiceDoc},
		{
			name: "an unknown field",
			docs: "apiVersion: v1alpha1\nkind: ExtensionServiceConfig\nname: a\nenv: [A=B]\n",
			want: `line +4: unknown field "env" in ExtensionServiceConfig["a"]`,
		},
		{
			name: "environment of the wrong type",
			docs: "apiVersion: v1alpha1\nkind: ExtensionServiceConfig\nname: a\nenvironment: {A: B}\n",
			want: `line +4: ExtensionServiceConfig["a"].environment: expected a sequence, got a mapping`,
		},
	})

	obsCheck(t, []obsCheckCase{
		{name: "refused however good", docs: extServiceDoc, want: []string{extServiceRefused}},
		{name: "refused in a container too", mode: configs.ModeContainer, docs: extServiceDoc, want: []string{extServiceRefused}},
		{
			name: "Talos's rules first",
			docs: "apiVersion: v1alpha1\nkind: ExtensionServiceConfig\nconfigFiles:\n    - mountPath: /a\n    - content: x\n",
			want: []string{
				`line +2: ExtensionServiceConfig[""].name: name is required: the extension service's name (nut-client)`,
				`line +2: ExtensionServiceConfig[""]: talosbox does not run extension services yet: there is no service "" to configure (remove the document)`,
				`line +4: ExtensionServiceConfig[""].configFiles[0].content: extension content is required for extension ""`,
				`line +5: ExtensionServiceConfig[""].configFiles[1].mountPath: extension mount path is required for extension ""`,
			},
		},
		{
			name: "neither files nor environment",
			docs: "apiVersion: v1alpha1\nkind: ExtensionServiceConfig\nname: nut-client\n",
			want: []string{
				`line +2: ExtensionServiceConfig["nut-client"]: no config files found for extension "nut-client": write configFiles or environment`,
				extServiceRefused,
			},
		},
	})

	t.Run("encode", func(t *testing.T) {
		t.Parallel()

		obsRoundTrip(t, extServiceDoc, extServiceDoc)
	})

	t.Run("patch", func(t *testing.T) {
		t.Parallel()

		// Talos merges configFiles by mountPath.
		cfg := obsPatched(t, extServiceDoc, "apiVersion: v1alpha1\nkind: ExtensionServiceConfig\nname: nut-client\nconfigFiles:\n"+
			"    - content: new\n      mountPath: /usr/local/etc/nut/upsmon.conf\n    - content: b\n      mountPath: /b\n")

		d := configs.DocumentOf[*configs.ExtensionServiceConfig](cfg)
		if d == nil || len(d.ConfigFiles) != 2 || d.ConfigFiles[0].Content != "new" || d.ConfigFiles[1].MountPath != "/b" || len(d.Environment) != 1 {
			t.Errorf("strategic merge: %+v", d)
		}

		cfg = obsPatched(t, extServiceDoc, `[{"op": "add", "path": "/ExtensionServiceConfig/nut-client/environment/-", "value": "B=C"}]`)
		if d := configs.DocumentOf[*configs.ExtensionServiceConfig](cfg); d == nil || len(d.Environment) != 2 || d.Environment[1] != "B=C" {
			t.Errorf("JSON patch: %+v", d)
		}
	})
}
