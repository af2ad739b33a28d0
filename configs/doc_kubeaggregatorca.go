package configs

// KubeAggregatorCAConfig is Talos's KubeAggregatorCAConfig: the front
// proxy (API aggregation) CA, cluster.aggregatorCA, and the CAs the API
// server accepts besides it for aggregated API clients, which v1alpha1
// cannot say: the node adds them to the API server's
// requestheader-client-ca-file from the document.
type KubeAggregatorCAConfig struct {
	IssuingCA   *CertificateAndKey `yaml:"issuingCA,omitempty"`
	AcceptedCAs []string           `yaml:"acceptedCAs,omitempty"`
}

// Kind implements Document.
func (*KubeAggregatorCAConfig) Kind() string { return "KubeAggregatorCAConfig" }

func (k *KubeAggregatorCAConfig) check(v *validator, path string) {
	v.controlPlaneOnly(path, k.Kind())

	if k.IssuingCA == nil {
		v.errorf(path+".issuingCA", "issuing CA is not set: the aggregator CA's certificate and key (cert, key)")
	}

	v.issuingCA(path+".issuingCA", k.IssuingCA)
	v.acceptedPEMs(path+".acceptedCAs", k.AcceptedCAs)
}

func (k *KubeAggregatorCAConfig) fold(f *folding) {
	if f.writtenCluster().AggregatorCA != nil {
		f.conflict("", "cluster.aggregatorCA", "the aggregator CA")
	}

	if k.IssuingCA == nil {
		return
	}

	f.cluster().AggregatorCA = &PEMCertificateAndKey{Crt: Base64(k.IssuingCA.Cert), Key: Base64(k.IssuingCA.Key)}
	f.alias("cluster.aggregatorCA", "issuingCA")
	f.alias("cluster.aggregatorCA.crt", "issuingCA.cert")
	f.alias("cluster.aggregatorCA.key", "issuingCA.key")
}

// AggregatorAcceptedCAs are the PEM certificates the API server accepts
// for aggregated API clients besides the aggregator CA: the
// KubeAggregatorCAConfig's acceptedCAs (none in v1alpha1).
func AggregatorAcceptedCAs(c *Config) [][]byte {
	k := DocumentOf[*KubeAggregatorCAConfig](c)
	if k == nil {
		return nil
	}

	out := make([][]byte, 0, len(k.AcceptedCAs))
	for _, ca := range k.AcceptedCAs {
		out = append(out, []byte(ca))
	}

	return out
}
