package configs_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

// TestDecodeGolden checks the exact message of every kind of decode error.
func TestDecodeGolden(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		in   string
		want string
	}{
		{
			name: "unknown field with line and path",
			in:   "machine:\n  network:\n    hostname: a\n    foo: 1\n",
			want: `line 4: unknown field "foo" in machine.network`,
		},
		{
			name: "unknown top-level field",
			in:   "version: v1alpha1\nmachines: {}\n",
			want: `line 2: unknown field "machines" in the config root (did you mean "machine"?)`,
		},
		{
			name: "unknown field inside a list item",
			in:   "machine:\n  network:\n    interfaces:\n      - interface: eth0\n      - interface: eth1\n        adresses: [10.0.0.1/8]\n",
			want: `line 6: unknown field "adresses" in machine.network.interfaces[1] (did you mean "addresses"?)`,
		},
		{
			name: "unknown field with a case-insensitive match",
			in:   "machine:\n  network:\n    interfaces:\n      - interface: eth0\n        vlans:\n          - vlanID: 5\n",
			want: `line 6: unknown field "vlanID" in machine.network.interfaces[0].vlans[0] (did you mean "vlanId"?)`,
		},
		{
			name: "keySlot as written in the disk encryption guide",
			in:   "machine:\n  systemDiskEncryption:\n    ephemeral:\n      keys:\n        - static:\n            passphrase: oldkey\n          keySlot: 0\n",
			want: `line 7: unknown field "keySlot" in machine.systemDiskEncryption.ephemeral.keys[0] (did you mean "slot"?)`,
		},
		{
			name: "encryption partition without its parent, as in the guide",
			in:   "machine:\n  state:\n    keys:\n      - nodeID: {}\n        slot: 1\n",
			want: `line 2: unknown field "state" in machine`,
		},
		{
			name: "registry mirror indented as in the air-gapped guide",
			in:   "machine:\n  registries:\n      mirrors:\n      '*':\n          endpoints:\n          - http://10.5.0.1:6000/\n",
			want: `line 4: unknown field "*" in machine.registries`,
		},
		{
			name: "wireguard peers as a mapping, as in the guide",
			in:   "machine:\n  network:\n    interfaces:\n      - interface: wg0\n        wireguard:\n          peers:\n            allowedIPs: [192.168.88.0/24]\n            publicKey: ABCDEF\n",
			want: `line 7: machine.network.interfaces[0].wireguard.peers: expected a sequence, got a mapping`,
		},
		{
			name: "unknown field in a map value",
			in:   "machine:\n  registries:\n    mirrors:\n      docker.io:\n        endpoint: [http://a]\n",
			want: `line 5: unknown field "endpoint" in machine.registries.mirrors["docker.io"] (did you mean "endpoints"?)`,
		},
		{
			name: "malformed YAML",
			in:   "machine:\n  type: worker\n network: {}\n",
			// yaml.v3 says line 2, where the enclosing block starts.
			want: `line 3: invalid YAML: did not find expected key`,
		},
		{
			name: "unclosed flow sequence",
			in:   "machine:\n  certSANs: [a, b\n",
			want: `line 2: invalid YAML: did not find expected ',' or ']'`,
		},
		{
			name: "tab indentation",
			in:   "machine:\n\ttype: worker\n",
			want: `line 2: invalid YAML: found character that cannot start any token`,
		},
		{
			name: "JSON with comments",
			in:   "{\n  \"version\": \"v1alpha1\",\n  // the node's role\n  \"machine\": {\"type\": \"worker\"}\n}\n",
			want: `line 3: a // comment is not YAML (nor JSON): write comments after a # (# ...), or remove them`,
		},
		{
			name: "JSON with a comment after a value",
			in:   "{\n  \"version\": \"v1alpha1\", // v1alpha1 only\n  \"machine\": {\"type\": \"worker\"}\n}\n",
			want: `line 2: a // comment is not YAML (nor JSON): write comments after a # (# ...), or remove them`,
		},
		{
			name: "JSON with a block comment",
			in:   "{\n  \"version\": \"v1alpha1\",\n  \"machine\": {\n    /* workers join */\n    \"type\": \"worker\"}\n}\n",
			want: `line 4: a /* */ comment is not YAML (nor JSON): write comments after a # (# ...), or remove them`,
		},
		{
			name: "a // comment line in YAML",
			in:   "version: v1alpha1\n// the node's role\nmachine: {type: worker}\n",
			want: `line 2: a // comment is not YAML (nor JSON): write comments after a # (# ...), or remove them`,
		},
		{
			// A URL's // is not a comment, nor is // in a quoted string.
			name: "JSON whose error is not a comment",
			in:   "{\n  \"endpoint\": \"https://x\", \"a\": \"b // c\",\n  \"machine\": {\"type\": \"worker\"\n",
			want: `line 3: invalid YAML: did not find expected ',' or '}'`,
		},
		{
			name: "second v1alpha1 document",
			in:   "version: v1alpha1\n---\nversion: v1alpha1\n",
			want: `line 3: a second v1alpha1 document (version: v1alpha1; the first starts on line 1): a config has at most one, and every other document names its apiVersion and kind`,
		},
		{
			name: "empty input",
			in:   "",
			want: `config is empty`,
		},
		{
			name: "comments only",
			in:   "# nothing here\n",
			want: `config is empty`,
		},
		{
			name: "not a mapping",
			in:   "- machine\n",
			want: `line 1: a config document must be a mapping, got a sequence`,
		},
		{
			name: "section of the wrong kind",
			in:   "machine:\n  network: [eth0]\n",
			want: `line 2: machine.network: expected a mapping, got a sequence`,
		},
		{
			name: "mapping where a string is expected",
			in:   "machine:\n  network:\n    hostname: {name: a}\n",
			want: `line 3: machine.network.hostname: expected a single value, got a mapping`,
		},
		{
			name: "integer field with text",
			in:   "machine:\n  network:\n    interfaces:\n      - interface: eth0\n        mtu: big\n",
			want: `line 5: machine.network.interfaces[0].mtu: expected a non-negative integer that fits in uint32, got "big"`,
		},
		{
			name: "negative unsigned",
			in:   "machine:\n  network:\n    interfaces:\n      - interface: eth0\n        routes:\n          - metric: -1\n",
			want: `line 6: machine.network.interfaces[0].routes[0].metric: expected a non-negative integer that fits in uint32, got "-1"`,
		},
		{
			name: "VLAN ID overflows",
			in:   "machine:\n  network:\n    interfaces:\n      - interface: eth0\n        vlans:\n          - vlanId: 70000\n",
			want: `line 6: machine.network.interfaces[0].vlans[0].vlanId: expected a non-negative integer that fits in uint16, got "70000"`,
		},
		{
			name: "signed integer with text",
			in:   "machine:\n  systemDiskEncryption:\n    state:\n      keys:\n        - slot: first\n",
			want: `line 5: machine.systemDiskEncryption.state.keys[0].slot: expected an integer that fits in int, got "first"`,
		},
		{
			name: "boolean with text",
			in:   "machine:\n  network:\n    interfaces:\n      - interface: eth0\n        dhcp: maybe\n",
			want: `line 5: machine.network.interfaces[0].dhcp: expected a boolean, got "maybe"`,
		},
		{
			name: "quoted yes where a boolean is expected",
			in:   "version: v1alpha1\npersist: \"yes\"\n",
			want: `line 2: persist: want a boolean (true or false), got the string "yes"`,
		},
		{
			name: "quoted true where a boolean is expected",
			in:   "debug: 'true'\n",
			want: `line 1: debug: want a boolean (true or false), got the string "true"`,
		},
		{
			name: "quoted boolean deep in the config",
			in:   "machine:\n  network:\n    interfaces:\n      - interface: eth0\n        dhcp: \"false\"\n",
			want: `line 5: machine.network.interfaces[0].dhcp: want a boolean (true or false), got the string "false"`,
		},
		{
			name: "boolean tagged as a string",
			in:   "machine:\n  features:\n    kubePrism:\n      enabled: !!str true\n",
			want: `line 4: machine.features.kubePrism.enabled: want a boolean (true or false), got the string "true"`,
		},
		{
			name: "optional boolean quoted",
			in:   "machine:\n  network:\n    interfaces:\n      - deviceSelector:\n          physical: \"true\"\n",
			want: `line 5: machine.network.interfaces[0].deviceSelector.physical: want a boolean (true or false), got the string "true"`,
		},
		{
			name: "config larger than the API accepts",
			in:   "# " + strings.Repeat("x", configs.MaxSize) + "\n",
			want: fmt.Sprintf("config is %d bytes, larger than the 16777216 bytes (16 MiB) the Talos API accepts in one ApplyConfiguration message", configs.MaxSize+3),
		},
		{
			name: "duration without unit",
			in:   "machine:\n  time:\n    bootTimeout: 5\n",
			want: `line 3: machine.time.bootTimeout: invalid duration "5": expected a Go duration such as "30s" or "1h30m"`,
		},
		{
			name: "duration in words",
			in:   "cluster:\n  adminKubeconfig:\n    certLifetime: one year\n",
			want: `line 3: cluster.adminKubeconfig.certLifetime: invalid duration "one year": expected a Go duration such as "30s" or "1h30m"`,
		},
		{
			name: "certificate not base64",
			in:   "machine:\n  ca:\n    crt: -----BEGIN CERTIFICATE-----\n",
			want: `line 3: machine.ca.crt: invalid base64: illegal base64 data at input byte 0`,
		},
		{
			name: "permissions in symbolic form",
			in:   "machine:\n  files:\n    - path: /a\n      permissions: rw-r--r--\n",
			want: `line 4: machine.files[0].permissions: expected a non-negative integer that fits in uint32, got "rw-r--r--"`,
		},
		{
			name: "duplicate key",
			in:   "machine:\n  type: worker\n  token: a\n  type: controlplane\n",
			want: `line 4: machine: duplicate key "type" (first at line 2)`,
		},
		{
			name: "duplicate map key",
			in:   "machine:\n  env:\n    A: 1\n    A: 2\n",
			want: `line 4: machine.env: duplicate key "A" (first at line 3)`,
		},
		{
			name: "merge key",
			in:   "machine:\n  <<: {type: worker}\n",
			want: `line 2: machine: merge keys (<<) are not supported`,
		},
		{
			name: "sequence as a key",
			in:   "machine:\n  ? [a]\n  : 1\n",
			want: `line 2: machine: mapping keys must be single values, got a sequence`,
		},
		{
			name: "free-form section that is not a mapping",
			in:   "machine:\n  kubelet:\n    extraConfig: [maxPods]\n",
			want: `line 3: machine.kubelet.extraConfig: expected a mapping, got a sequence`,
		},
		{
			name: "duplicate key inside a free-form section",
			in:   "machine:\n  kubelet:\n    extraConfig:\n      maxPods: 1\n      maxPods: 2\n",
			want: `line 5: machine.kubelet.extraConfig: mapping key "maxPods" already defined at line 4`,
		},
		{
			name: "several problems at once",
			in:   "machine:\n  foo: 1\n  network:\n    mtu: 1500\ncluster:\n  bar: 2\n",
			want: "3 errors occurred:\n" +
				"\t* line 2: unknown field \"foo\" in machine\n" +
				"\t* line 4: unknown field \"mtu\" in machine.network\n" +
				"\t* line 6: unknown field \"bar\" in cluster\n\n",
		},
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()

			cfg, err := configs.Decode([]byte(tc.in))
			if err == nil {
				t.Fatalf("decoded without error: %+v", cfg)
			}

			if err.Error() != tc.want {
				t.Fatalf("got  %q\nwant %q", err.Error(), tc.want)
			}
		})
	}
}

// TestDecodeAccepts covers inputs that look odd but are valid.
func TestDecodeAccepts(t *testing.T) {
	t.Parallel()

	for name, in := range map[string]string{
		"trailing document marker":   "version: v1alpha1\n---\n",
		"trailing comment document":  "version: v1alpha1\n---\n# end\n",
		"explicit nulls":             "machine:\ncluster: ~\n",
		"aliases":                    "machine:\n  certSANs: &sans [a.example.com]\ncluster:\n  apiServer:\n    certSANs: *sans\n",
		"YAML 1.1 booleans":          "debug: yes\npersist: on\n",
		"octal permissions (1.1)":    "machine:\n  files:\n    - permissions: 0600\n",
		"quoted numbers":             "machine:\n  network:\n    interfaces:\n      - mtu: \"1500\"\n",
		"document start and comment": "# header\n---\nversion: v1alpha1 # trailing\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()

			cfg, err := configs.Decode([]byte(in))
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}

			roundTrip(t, cfg)
		})
	}
}
