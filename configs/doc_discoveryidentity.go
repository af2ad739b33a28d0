package configs

import "encoding/base64"

// DiscoveryIdentityConfig is Talos's DiscoveryIdentityConfig (written by
// gen config since Talos 1.14 in place of cluster.id and cluster.secret):
// the cluster's identity and the key its members' records are encrypted
// with. It is cluster.id and cluster.secret; Talos refuses it alongside
// either of them in the v1alpha1 document, and so does talosbox.
type DiscoveryIdentityConfig struct {
	ClusterID     string `yaml:"clusterID"`
	ClusterSecret string `yaml:"clusterSecret" secret:"true"`
}

// Kind implements Document.
func (*DiscoveryIdentityConfig) Kind() string { return "DiscoveryIdentityConfig" }

// clusterSecretSize is the secret's length, as Talos requires it.
const clusterSecretSize = 32

func (d *DiscoveryIdentityConfig) check(v *validator, path string) {
	if d.ClusterID == "" {
		v.errorf(path+".clusterID", "clusterID is required: talosctl gen config makes one (32 random bytes, base64)")
	}

	switch b, err := base64.StdEncoding.DecodeString(d.ClusterSecret); {
	case d.ClusterSecret == "":
		v.errorf(path+".clusterSecret", "clusterSecret is required: talosctl gen config makes one (32 random bytes, base64)")
	case err != nil:
		v.errorf(path+".clusterSecret", "invalid clusterSecret: it is not base64 (standard alphabet): %v", err)
	case len(b) != clusterSecretSize:
		v.errorf(path+".clusterSecret", "invalid clusterSecret: %d bytes, want %d", len(b), clusterSecretSize)
	}
}

func (d *DiscoveryIdentityConfig) fold(f *folding) {
	if w := f.written.Cluster; w != nil && (w.ID != "" || w.Secret != "") {
		f.conflict("", "cluster.id/cluster.secret", "the cluster identity")

		return
	}

	c := f.cluster()
	c.ID, c.Secret = d.ClusterID, d.ClusterSecret
	f.alias("cluster.id", "clusterID")
	f.alias("cluster.secret", "clusterSecret")
}
