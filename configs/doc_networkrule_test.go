package configs_test

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

const networkRuleDoc = `apiVersion: v1alpha1
kind: NetworkRuleConfig
name: test
portSelector:
  ports:
    - 53
    - 8000-9000
  protocol: udp
ingress:
  - subnet: 192.168.0.0/16
    except: 192.168.0.3/32
  - subnet: 2001::/16
`

func TestNetworkRuleConfig(t *testing.T) {
	t.Parallel()

	runNetDocCases(t, []netDocCase{
		{
			name: "Talos's example",
			docs: networkRuleDoc,
			effective: func(t *testing.T, cfg *configs.Config) {
				r := netDoc[*configs.NetworkRuleConfig](t, cfg)
				if r.Protocol() != 17 || !reflect.DeepEqual(r.PortSelector.Ports, []configs.PortRange{{Lo: 53, Hi: 53}, {Lo: 8000, Hi: 9000}}) {
					t.Errorf("rule: %+v", r)
				}

				in, ex := r.Subnets()
				if !reflect.DeepEqual(in, []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16"), netip.MustParsePrefix("2001::/16")}) ||
					!reflect.DeepEqual(ex, []netip.Prefix{netip.MustParsePrefix("192.168.0.3/32")}) {
					t.Errorf("subnets %v except %v", in, ex)
				}
			},
		},
		{
			name:      "unknown field",
			docs:      "apiVersion: v1alpha1\nkind: NetworkRuleConfig\nname: r\nportSelector:\n  port: 22\n",
			decodeErr: `unknown field "port" in NetworkRuleConfig["r"].portSelector (did you mean "ports"?)`,
		},
		{
			name:      "wrong type",
			docs:      "apiVersion: v1alpha1\nkind: NetworkRuleConfig\nname: r\nportSelector:\n  ports: [ssh]\n  protocol: tcp\n",
			decodeErr: `NetworkRuleConfig["r"].portSelector.ports[0]: invalid port range "ssh": want a port (53) or a range (8000-9000) of ports up to 65535`,
		},
		{
			name:      "a port above 65535",
			docs:      "apiVersion: v1alpha1\nkind: NetworkRuleConfig\nname: r\nportSelector:\n  ports: [65536]\n  protocol: tcp\n",
			decodeErr: `NetworkRuleConfig["r"].portSelector.ports[0]: invalid port range "65536"`,
		},
		{
			name: "Talos's rules",
			docs: `apiVersion: v1alpha1
kind: NetworkRuleConfig
name: r
portSelector:
  ports: [9000-8000, 100-200, 150, 200-300]
  protocol: sctp
ingress:
  - subnet: 10.0.0.1
  - subnet: 10.0.0.0/8
    except: nope
---
apiVersion: v1alpha1
kind: NetworkRuleConfig
name: ""
portSelector:
  protocol: ""
`,
			errs: []string{
				`NetworkRuleConfig["r"].portSelector.protocol: unsupported protocol "sctp": want tcp or udp`,
				`NetworkRuleConfig["r"].portSelector.ports: invalid port range: 150, overlaps with 100-200`,
				`NetworkRuleConfig["r"].portSelector.ports: invalid port range: 200-300, overlaps with 100-200`,
				`NetworkRuleConfig["r"].portSelector.ports: invalid port range: 9000-8000 (the first port is above the last)`,
				`NetworkRuleConfig["r"].ingress[0].subnet: invalid subnet "10.0.0.1": want a CIDR (192.168.0.0/16, 10.0.0.5/32)`,
				`NetworkRuleConfig["r"].ingress[1].except: invalid except "nope": want a CIDR (192.168.0.3/32)`,
				`NetworkRuleConfig[""].name: name is required`,
				`NetworkRuleConfig[""].portSelector.protocol: protocol must be specified: tcp or udp`,
				`NetworkRuleConfig[""].portSelector.ports: portSelector.ports is required`,
			},
		},
		{
			name: "ICMP has no ports",
			docs: "apiVersion: v1alpha1\nkind: NetworkRuleConfig\nname: r\nportSelector:\n  ports: [1]\n  protocol: icmp\n",
			errs: []string{`NetworkRuleConfig["r"].portSelector.protocol: protocol icmp has no ports: a NetworkRuleConfig selects tcp or udp ports (with ingress: block, ICMP is let in at 5 packets a second)`},
		},
	})
}

func TestNetworkRuleConfigRoundTripAndPatches(t *testing.T) {
	t.Parallel()

	checkNetDocRoundTrip(t, networkRuleDoc)

	// A single port is written as a number, as Talos writes it.
	cfg, err := configs.Decode([]byte(netDocConfig(t, "", "", networkRuleDoc)))
	if err != nil {
		t.Fatal(err)
	}

	out, err := cfg.Encode()
	if err != nil {
		t.Fatal(err)
	}

	if !strings.Contains(string(out), "        - 53\n        - 8000-9000\n") {
		t.Errorf("ports encoded as:\n%s", out[strings.LastIndex(string(out), "---"):])
	}

	// ingress and ports are replaced by a strategic merge patch, as Talos
	// marks them.
	checkNetDocPatch(t, networkRuleDoc, "apiVersion: v1alpha1\nkind: NetworkRuleConfig\nname: test\nportSelector:\n  ports: [22]\ningress:\n  - subnet: 10.0.0.0/8\n",
		func(t *testing.T, cfg *configs.Config) {
			r := netDoc[*configs.NetworkRuleConfig](t, cfg)
			if !reflect.DeepEqual(r.PortSelector.Ports, []configs.PortRange{{Lo: 22, Hi: 22}}) || r.PortSelector.Protocol != "udp" ||
				!reflect.DeepEqual(r.Ingress, []configs.IngressRule{{Subnet: "10.0.0.0/8"}}) {
				t.Errorf("after the strategic merge patch: %+v", r)
			}
		})

	checkNetDocPatch(t, networkRuleDoc, `[{"op": "add", "path": "/NetworkRuleConfig/test/portSelector/ports/-", "value": "10000-10010"}]`,
		func(t *testing.T, cfg *configs.Config) {
			if r := netDoc[*configs.NetworkRuleConfig](t, cfg); len(r.PortSelector.Ports) != 3 || r.PortSelector.Ports[2] != (configs.PortRange{Lo: 10000, Hi: 10010}) {
				t.Errorf("after the JSON patch: %+v", r.PortSelector)
			}
		})
}
