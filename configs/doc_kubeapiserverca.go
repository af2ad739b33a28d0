package configs

// KubeAPIServerCAConfig is Talos's KubeAPIServerCAConfig: the Kubernetes
// API CA. A control plane holds the issuing CA (cluster.ca, with its key)
// and the CAs accepted besides it during a rotation
// (cluster.acceptedCAs); a worker only trusts CAs, listed in acceptedCAs,
// the current one first. Unlike v1alpha1 it holds PEM text, not base64.
type KubeAPIServerCAConfig struct {
	IssuingCA   *CertificateAndKey `yaml:"issuingCA,omitempty"`
	AcceptedCAs []string           `yaml:"acceptedCAs,omitempty"`
}

// Kind implements Document.
func (*KubeAPIServerCAConfig) Kind() string { return "KubeAPIServerCAConfig" }

func (k *KubeAPIServerCAConfig) check(v *validator, path string) {
	v.issuingCA(path+".issuingCA", k.IssuingCA)
	v.acceptedPEMs(path+".acceptedCAs", k.AcceptedCAs)

	switch {
	case k.IssuingCA == nil && v.controlPlane():
		v.errorf(path+".issuingCA", "issuingCA (cert and key) is required on control planes: they issue the cluster's certificates with it")
	case k.IssuingCA == nil && len(k.AcceptedCAs) == 0:
		v.errorf(path, "neither issuingCA nor acceptedCAs: a worker needs the CA it trusts (acceptedCAs)")
	}
}

// fold: the issuing CA is cluster.ca; a worker's first accepted CA is
// cluster.ca (a certificate only, as v1alpha1 gives workers) and the
// others cluster.acceptedCAs. As in Talos, the document's accepted CAs
// are the node's; cluster.ca in the v1alpha1 document is a conflict.
func (k *KubeAPIServerCAConfig) fold(f *folding) {
	if f.writtenCluster().CA != nil {
		f.conflict("", "cluster.ca", "the Kubernetes API CA")
	}

	c := f.cluster()
	accepted := k.AcceptedCAs
	first := 0

	switch {
	case k.IssuingCA != nil:
		c.CA = &PEMCertificateAndKey{Crt: Base64(k.IssuingCA.Cert), Key: Base64(k.IssuingCA.Key)}
		f.alias("cluster.ca", "issuingCA")
		f.alias("cluster.ca.crt", "issuingCA.cert")
		f.alias("cluster.ca.key", "issuingCA.key")
	case len(accepted) > 0 && !f.cfg.IsControlPlane():
		c.CA = &PEMCertificateAndKey{Crt: Base64(accepted[0])}
		f.alias("cluster.ca", "acceptedCAs[0]")
		f.alias("cluster.ca.crt", "acceptedCAs[0]")

		accepted, first = accepted[1:], 1
	default:
		c.CA = nil
		f.alias("cluster.ca", "issuingCA")
	}

	c.AcceptedCAs = nil

	for i, ca := range accepted {
		c.AcceptedCAs = append(c.AcceptedCAs, PEMCertificate{Crt: Base64(ca)})
		f.alias(indexPath("cluster.acceptedCAs", i), indexPath("acceptedCAs", i+first))
		f.alias(indexPath("cluster.acceptedCAs", i)+".crt", indexPath("acceptedCAs", i+first))
	}

	f.alias("cluster.acceptedCAs", "acceptedCAs")
}
