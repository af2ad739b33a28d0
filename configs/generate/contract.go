package generate

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
)

// Contract is the Talos version a config is generated for (gen config
// --talos-version): the set of fields and defaults that version reads.
// Talos decodes machine configs strictly, so a node refuses a config that
// names a field its version does not know; an older contract therefore
// leaves such fields out rather than setting them to false.
//
// The zero Contract means Default.
type Contract struct {
	Major, Minor int
}

// Contracts this generator can write.
var (
	// Current is the newest Talos line talosbox knows (v1.15): the
	// Kubernetes settings are documents (KubeAPIServerConfig, ...), not
	// the cluster section.
	Current = Contract{1, 15}
	// Default is what gen config writes without --talos-version: today's
	// Talos release line (v1.13), the v1alpha1 document with the
	// Kubernetes settings in it and a HostnameConfig document.
	Default = Contract{1, 13}
	// Oldest is the first contract written. Talos 1.x dropped the 0.x
	// contracts, and this generator does not model the 0.x schema either.
	Oldest = Contract{1, 0}
)

// ErrUnsupportedContract is a well-formed version whose contract this
// generator cannot honour.
var ErrUnsupportedContract = errors.New("not supported")

// talosVersion accepts what users type: v1.7, 1.7, v1.7.4, v1.8.0-beta.1.
var talosVersion = regexp.MustCompile(`^v?(\d+)\.(\d+)(\.\d+([-+][0-9A-Za-z.+-]+)?)?$`)

// ParseContract turns a Talos version into the contract to generate for.
// Malformed versions and versions outside [Oldest, Current] are refused
// with the reason; the caller names the flag and the version.
func ParseContract(version string) (Contract, error) {
	m := talosVersion.FindStringSubmatch(version)
	if m == nil {
		return Contract{}, fmt.Errorf("malformed Talos version: want one such as %s or %s.4", Current, Current)
	}

	major, err := strconv.Atoi(m[1])
	if err != nil {
		return Contract{}, fmt.Errorf("malformed Talos version: %w", err)
	}

	minor, err := strconv.Atoi(m[2])
	if err != nil {
		return Contract{}, fmt.Errorf("malformed Talos version: %w", err)
	}

	c := Contract{major, minor}
	if err := c.check(); err != nil {
		return Contract{}, err
	}

	return c, nil
}

// check refuses a contract outside [Oldest, Current].
func (c Contract) check() error {
	switch {
	case c.less(Contract{0, 9}):
		return fmt.Errorf("%w: the oldest contract this generator writes is %s (%s configs lack .cluster.aggregatorCA and use RSA keys)", ErrUnsupportedContract, Oldest, c)
	case c.less(Oldest):
		return fmt.Errorf("%w: the oldest contract this generator writes is %s (0.x configs predate the 1.0 schema, e.g. they turn PodSecurityPolicy on, and Talos 1.x no longer writes them either)", ErrUnsupportedContract, Oldest)
	case Current.less(c):
		return fmt.Errorf("%w: the newest contract this generator knows is %s; newer Talos reads it, so write --talos-version %s", ErrUnsupportedContract, Current, Current)
	}

	return nil
}

func (c Contract) String() string { return fmt.Sprintf("v%d.%d", c.Major, c.Minor) }

func (c Contract) less(o Contract) bool {
	return c.Major < o.Major || (c.Major == o.Major && c.Minor < o.Minor)
}

// AtLeast says whether c is version major.minor or newer.
func (c Contract) AtLeast(major, minor int) bool { return !c.less(Contract{major, minor}) }

// What each contract writes, by the Talos version that made it the
// generated default (Talos's config.VersionContract). A field is never
// written for a version older than the one that introduced it. Workers
// keep cluster.clusterName in every contract, although Talos writes it
// for them only from v1.8: every 1.x reads the field, and talosbox nodes
// require it.

// podSecurityAdmission: the PodSecurity admission plugin config (v1.1).
func (c Contract) podSecurityAdmission() bool { return c.AtLeast(1, 1) }

// stableHostname: features.stableHostname (v1.2).
func (c Contract) stableHostname() bool { return c.AtLeast(1, 2) }

// kubeletSeccompDefault: kubelet.defaultRuntimeSeccompProfileEnabled (v1.2).
func (c Contract) kubeletSeccompDefault() bool { return c.AtLeast(1, 2) }

// kubernetesDiscoveryOff: the Kubernetes discovery registry disabled (v1.2).
func (c Contract) kubernetesDiscoveryOff() bool { return c.AtLeast(1, 2) }

// apidExtKeyUsage: features.apidCheckExtKeyUsage (v1.3).
func (c Contract) apidExtKeyUsage() bool { return c.AtLeast(1, 3) }

// auditPolicy: apiServer.auditPolicy (v1.3).
func (c Contract) auditPolicy() bool { return c.AtLeast(1, 3) }

// kubeletManifestsOff: kubelet.disableManifestsDirectory (v1.3).
func (c Contract) kubeletManifestsOff() bool { return c.AtLeast(1, 3) }

// secretbox: cluster.secretboxEncryptionSecret (v1.3); older versions
// encrypt with aescbcEncryptionSecret only.
func (c Contract) secretbox() bool { return c.AtLeast(1, 3) }

// diskQuota: features.diskQuotaSupport (v1.5).
func (c Contract) diskQuota() bool { return c.AtLeast(1, 5) }

// kubePrism: features.kubePrism on (v1.6; the field appeared in v1.5).
func (c Contract) kubePrism() bool { return c.AtLeast(1, 6) }

// hostDNS: features.hostDNS (v1.7).
func (c Contract) hostDNS() bool { return c.AtLeast(1, 7) }

// forwardKubeDNSToHost: hostDNS.forwardKubeDNSToHost (v1.8).
func (c Contract) forwardKubeDNSToHost() bool { return c.AtLeast(1, 8) }

// excludeFromLoadBalancers: control planes labelled
// node.kubernetes.io/exclude-from-external-load-balancers (v1.8).
func (c Contract) excludeFromLoadBalancers() bool { return c.AtLeast(1, 8) }

// multidocNetwork: the network settings Talos 1.12 moved out of
// machine.network into documents: HostnameConfig auto stable instead of
// features.stableHostname, and registry mirrors as RegistryMirrorConfig
// documents (v1.12).
func (c Contract) multidocNetwork() bool { return c.AtLeast(1, 12) }

// hideRBACAndKeyUsage: features.rbac and features.apidCheckExtKeyUsage
// left out, as their defaults are on (v1.12).
func (c Contract) hideRBACAndKeyUsage() bool { return c.AtLeast(1, 12) }

// grubUseUKICmdline: install.grubUseUKICmdline on (v1.12).
func (c Contract) grubUseUKICmdline() bool { return c.AtLeast(1, 12) }

// endpointSANs: the endpoint's host in apiServer.certSANs (until v1.12,
// which leaves it to the certificate, where talosbox always puts it).
func (c Contract) endpointSANs() bool { return !c.AtLeast(1, 12) }

// noEmptyNetwork: no empty machine.network section (v1.13).
func (c Contract) noEmptyNetwork() bool { return c.AtLeast(1, 13) }

// multidocKubernetes: the Kubernetes settings as the k8s documents
// (KubeClusterConfig, KubeletConfig, KubeAPIServerConfig, ...) instead
// of the cluster section and machine.kubelet (v1.14), with the other
// documents Talos 1.14 writes (discovery, host DNS, the EPHEMERAL volume,
// filesystem trim, workload isolation).
func (c Contract) multidocKubernetes() bool { return c.AtLeast(1, 14) }
