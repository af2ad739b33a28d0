package secrets

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/talosbox/talosbox/internal/pki"
)

// KubeconfigOptions describe a single-cluster kubeconfig. Entries are named
// the Talos way: cluster ClusterName, user User@ClusterName, context
// Context@ClusterName. Exactly one of Client and Token authenticates.
type KubeconfigOptions struct {
	ClusterName, Server, User, Context string
	CAs                                [][]byte // PEM, all trusted
	Client                             *pki.CertAndKey
	Token                              string
}

// Kubeconfig renders a kubeconfig from o.
func Kubeconfig(o KubeconfigOptions) ([]byte, error) {
	switch {
	case o.ClusterName == "" || o.User == "" || o.Context == "":
		return nil, errors.New("kubeconfig: cluster, user and context names are required")
	case o.Server == "":
		return nil, errors.New("kubeconfig: server is required")
	case (o.Client == nil) == (o.Token == ""):
		return nil, errors.New("kubeconfig: exactly one of a client certificate and a token is required")
	}

	var bundle bytes.Buffer

	for _, ca := range o.CAs {
		ca = bytes.TrimSpace(ca)
		if len(ca) == 0 {
			continue
		}

		bundle.Write(ca)
		bundle.WriteByte('\n')
	}

	if bundle.Len() == 0 {
		return nil, errors.New("kubeconfig: at least one CA certificate is required")
	}

	auth := &clientcmdapi.AuthInfo{Token: o.Token}
	if o.Client != nil {
		if len(o.Client.Crt) == 0 || len(o.Client.Key) == 0 {
			return nil, errors.New("kubeconfig: client certificate or key is empty")
		}

		auth.ClientCertificateData, auth.ClientKeyData = o.Client.Crt, o.Client.Key
	}

	user := o.User + "@" + o.ClusterName
	ctx := o.Context + "@" + o.ClusterName

	// client-go's own form and writer: the same the client side reads
	// and merges kubeconfigs with (internal/cluster/kubernetes).
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[o.ClusterName] = &clientcmdapi.Cluster{Server: o.Server, CertificateAuthorityData: bundle.Bytes()}
	cfg.AuthInfos[user] = auth
	cfg.Contexts[ctx] = &clientcmdapi.Context{Cluster: o.ClusterName, AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = ctx

	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}

	return data, nil
}

// AdminKubeconfig is what `talosctl kubeconfig` hands out: a system:masters
// certificate for CN admin, pointed at the cluster endpoint. lifetime zero
// means in.AdminKubeconfigLifetime, or one year.
func AdminKubeconfig(in Inputs, lifetime time.Duration) ([]byte, error) {
	if in.Endpoint == nil {
		return nil, errors.New("admin kubeconfig: endpoint is missing")
	}

	if lifetime <= 0 {
		lifetime = in.AdminKubeconfigLifetime
	}

	if lifetime <= 0 {
		lifetime = DefaultValidity
	}

	data, err := certKubeconfig(&in, endpointServer(in.Endpoint.String()), AdminCN, MastersGroup, adminName, adminName, lifetime)
	if err != nil {
		return nil, fmt.Errorf("admin kubeconfig: %w", err)
	}

	return data, nil
}

// BootstrapKubeconfig is the kubelet's TLS-bootstrap kubeconfig: the
// bootstrap token is only good for requesting the kubelet's own client
// certificate.
func BootstrapKubeconfig(server string, cas [][]byte, token string) ([]byte, error) {
	if !pki.ValidToken(token) {
		return nil, errors.New("bootstrap kubeconfig: bootstrap token is missing or malformed")
	}

	data, err := Kubeconfig(KubeconfigOptions{
		ClusterName: "local",
		Server:      server,
		User:        "kubelet",
		Context:     "kubelet",
		CAs:         cas,
		Token:       token,
	})
	if err != nil {
		return nil, fmt.Errorf("bootstrap kubeconfig: %w", err)
	}

	return data, nil
}

// certKubeconfig issues a client certificate from the cluster CA and wraps
// it in a kubeconfig trusting all accepted CAs.
func certKubeconfig(in *Inputs, server, cn, org, user, context string, lifetime time.Duration) ([]byte, error) {
	if in.ClusterName == "" {
		return nil, errors.New("cluster name is missing")
	}

	client, err := issueLeaf(in.CA, leafSpec{cn: cn, orgs: []string{org}}, in.now(), lifetime)
	if err != nil {
		return nil, fmt.Errorf("client certificate: %w", err)
	}

	return Kubeconfig(KubeconfigOptions{
		ClusterName: in.ClusterName,
		Server:      server,
		User:        user,
		Context:     context,
		CAs:         [][]byte{AcceptedCABundle(*in)},
		Client:      client,
	})
}

// endpointServer drops a trailing slash so the server reads as users type
// it in kubeconfigs.
func endpointServer(s string) string {
	return strings.TrimSuffix(s, "/")
}
