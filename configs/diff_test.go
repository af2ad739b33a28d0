package configs_test

import (
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

// diffBase is the config the Compare cases start from.
const diffBase = `version: v1alpha1
persist: true
machine:
    type: worker
    certSANs: [a.example]
    network:
        hostname: a
        interfaces:
            - interface: eth0
              mtu: 1500
    env:
        A: "1"
    sysctls:
        net.ipv4.ip_forward: "1"
    kubelet:
        extraConfig:
            maxPods: 110
cluster:
    clusterName: demo
`

func TestCompare(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		old  string // "" is a nil config
		new  string
		want []string // Change.String of each, in order
	}{
		{name: "identical", old: diffBase, new: diffBase},
		{
			name: "layout, comments, key order and quoting mean nothing",
			old:  diffBase,
			new: `# the same config, written by hand
cluster: {clusterName: "demo"}
machine:
  sysctls: {"net.ipv4.ip_forward": '1'}
  kubelet: {extraConfig: {maxPods: 110}}
  env: {A: "1"}   # proxy settings go here
  network:
    interfaces: [{mtu: 1500, interface: eth0}]
    hostname: "a"
  certSANs:
  - a.example
  type: worker
persist: true
version: v1alpha1
`,
		},
		{
			name: "values spelled at their zero value mean nothing",
			old:  diffBase,
			new: diffBase + `debug: false
`,
		},
		{
			name: "empty sections mean nothing",
			old:  diffBase,
			new:  strings.Replace(diffBase, "    type: worker\n", "    type: worker\n    files: []\n    nodeLabels: {}\n    token: \"\"\n", 1),
		},
		{
			name: "a changed value",
			old:  diffBase,
			new:  strings.Replace(diffBase, "hostname: a", "hostname: b", 1),
			want: []string{`~ machine.network.hostname: "a" -> "b"`},
		},
		{
			name: "an added key with dots in it",
			old:  diffBase,
			new:  strings.Replace(diffBase, "        net.ipv4.ip_forward: \"1\"\n", "        net.ipv4.ip_forward: \"1\"\n        vm.swappiness: \"10\"\n", 1),
			want: []string{`+ machine.sysctls.vm.swappiness: "10"`},
		},
		{
			name: "a removed section shows its leaves, where it stood",
			old:  diffBase,
			new:  strings.Replace(strings.Replace(diffBase, "    env:\n        A: \"1\"\n", "", 1), "hostname: a", "hostname: b", 1),
			want: []string{`~ machine.network.hostname: "a" -> "b"`, `- machine.env.A: "1"`},
		},
		{
			name: "a list of plain values changes as a whole",
			old:  diffBase,
			new:  strings.Replace(diffBase, "[a.example]", "[a.example, b.example]", 1),
			want: []string{`~ machine.certSANs: [a.example] -> [a.example, b.example]`},
		},
		{
			name: "a list of sections changes item by item",
			old:  diffBase,
			new: strings.Replace(diffBase, "              mtu: 1500\n",
				"              mtu: 9000\n            - interface: eth1\n              dhcp: true\n", 1),
			want: []string{
				`~ machine.network.interfaces[0].mtu: 1500 -> 9000`,
				`+ machine.network.interfaces[1].interface: "eth1"`,
				`+ machine.network.interfaces[1].dhcp: true`,
			},
		},
		{
			name: "an added list shows whole, multi-line strings on one line",
			old:  diffBase,
			new:  strings.Replace(diffBase, "    type: worker\n", "    type: worker\n    files: [{path: /var/f, content: \"x\\ny\\n\", op: create}]\n", 1),
			want: []string{`+ machine.files: [{content: "x\ny\n", path: /var/f, op: create}]`},
		},
		{
			name: "free-form values keep their types",
			old:  diffBase,
			new:  strings.Replace(diffBase, "maxPods: 110", `maxPods: "110"`, 1),
			want: []string{`~ machine.kubelet.extraConfig.maxPods: 110 -> "110"`},
		},
		{
			name: "a value that becomes a section",
			old:  strings.Replace(diffBase, "maxPods: 110", "x: 1", 1),
			new:  strings.Replace(diffBase, "maxPods: 110", "x: {y: 1}", 1),
			want: []string{`~ machine.kubelet.extraConfig.x: 1 -> {y: 1}`},
		},
		{
			name: "from nothing, every leaf is added",
			new:  "version: v1alpha1\nmachine: {type: worker, network: {hostname: a}}\n",
			want: []string{
				`+ version: "v1alpha1"`, `+ debug: false`, `+ persist: true`,
				`+ machine.type: "worker"`, `+ machine.network.hostname: "a"`,
			},
		},
		{
			// Talos reads an omitted persist as true.
			name: "persist omitted is persist: true, no change",
			old:  diffBase,
			new:  strings.Replace(diffBase, "persist: true\n", "", 1),
		},
		{
			name: "persist: false is a real change",
			old:  diffBase,
			new:  strings.Replace(diffBase, "persist: true\n", "persist: false\n", 1),
			want: []string{`~ persist: true -> false`},
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			var old *configs.Config
			if tt.old != "" {
				old = decode(t, tt.old)
			}

			changes, err := configs.Compare(old, decode(t, tt.new))
			if err != nil {
				t.Fatal(err)
			}

			got := make([]string, len(changes))
			for i, c := range changes {
				got[i] = c.String()
			}

			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}

			diff, err := configs.Diff(old, decode(t, tt.new))
			if want := strings.Join(tt.want, "\n"); err != nil || strings.TrimSuffix(diff, "\n") != want || (want != "" && !strings.HasSuffix(diff, "\n")) {
				t.Errorf("Diff = %q (%v), want the changes one per line", diff, err)
			}
		})
	}
}

func TestPathString(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct {
		path configs.Path
		want string
	}{
		{nil, ""},
		{configs.Path{"machine", "network", "hostname"}, "machine.network.hostname"},
		{configs.Path{"machine", "network", "interfaces", "[0]", "addresses", "[1]"}, "machine.network.interfaces[0].addresses[1]"},
		{configs.Path{"machine", "sysctls", "net.ipv4.ip_forward"}, "machine.sysctls.net.ipv4.ip_forward"},
	} {
		if got := tt.path.String(); got != tt.want {
			t.Errorf("%q: %q, want %q", []string(tt.path), got, tt.want)
		}
	}
}

// Paths returned by Compare do not share storage: appending to one must
// not change another.
func TestCompareChangesOwnTheirPaths(t *testing.T) {
	t.Parallel()

	changes, err := configs.Compare(nil, decode(t, diffBase))
	if err != nil {
		t.Fatal(err)
	}

	before := make([]string, len(changes))
	for i, c := range changes {
		before[i] = c.Path.String()
	}

	for _, c := range changes {
		_ = append(c.Path, "x")
	}

	for i, c := range changes {
		if c.Path.String() != before[i] {
			t.Fatalf("change %d path became %s, was %s", i, c.Path, before[i])
		}
	}
}

func decode(t *testing.T, text string) *configs.Config {
	t.Helper()

	cfg, err := configs.Decode([]byte(text))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}

	return cfg
}
