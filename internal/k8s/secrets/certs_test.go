package secrets

import (
	"crypto/x509"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/pki"
)

func TestIssueStaticPodCerts(t *testing.T) {
	cas := newTestCAs(t)
	in := testInputs(t, cas)

	certs, err := IssueStaticPodCerts(in)
	if err != nil {
		t.Fatalf("IssueStaticPodCerts: %v", err)
	}

	tests := []struct {
		name    string
		pair    pki.CertAndKey
		ca      *pki.CertAndKey
		wrongCA *pki.CertAndKey
		cn      string
		orgs    []string
		eku     x509.ExtKeyUsage
	}{
		{"apiserver", certs.APIServer, cas.k8s, cas.aggregator, "kube-apiserver", []string{"kube-master"}, x509.ExtKeyUsageServerAuth},
		{"apiserver-kubelet-client", certs.APIServerKubeletClient, cas.k8s, cas.etcd, "apiserver-kubelet-client",
			[]string{"system:masters"}, x509.ExtKeyUsageClientAuth},
		{"front-proxy-client", certs.FrontProxyClient, cas.aggregator, cas.k8s, "front-proxy-client", nil, x509.ExtKeyUsageClientAuth},
		{"etcd client", certs.EtcdClient, cas.etcd, cas.k8s, "kube-apiserver", nil, x509.ExtKeyUsageClientAuth},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crt := mustCert(t, tt.pair.Crt)

			if crt.Subject.CommonName != tt.cn || !slices.Equal(crt.Subject.Organization, tt.orgs) {
				t.Errorf("subject = %v, want CN=%s O=%v", crt.Subject, tt.cn, tt.orgs)
			}

			if !slices.Equal(crt.ExtKeyUsage, []x509.ExtKeyUsage{tt.eku}) {
				t.Errorf("ExtKeyUsage = %v, want only %v", crt.ExtKeyUsage, tt.eku)
			}

			if crt.IsCA {
				t.Error("leaf certificate is a CA")
			}

			if err := verifyChain(crt, tt.ca.Crt, tt.eku, fixedNow); err != nil {
				t.Errorf("does not verify against its CA: %v", err)
			}

			if err := verifyChain(crt, tt.wrongCA.Crt, tt.eku, fixedNow); err == nil {
				t.Error("verifies against an unrelated CA")
			}

			if got, want := crt.NotBefore, fixedNow.Add(-10*time.Second); !got.Equal(want) {
				t.Errorf("NotBefore = %v, want %v", got, want)
			}

			if got := crt.NotAfter.Sub(fixedNow); got != DefaultValidity {
				t.Errorf("validity = %v, want %v", got, DefaultValidity)
			}

			if err := tt.pair.Validate(); err != nil || len(tt.pair.Key) == 0 {
				t.Errorf("key does not match certificate: %v", err)
			}
		})
	}
}

func TestAPIServerSANs(t *testing.T) {
	cas := newTestCAs(t)

	tests := []struct {
		name    string
		mutate  func(*Inputs)
		wantDNS []string
		wantIPs []string
	}{
		{
			name: "full",
			wantDNS: []string{
				"cp-1", "cp-1.example.com", "k8s.example.com", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
				"kubernetes.default.svc.cluster.local", "lb.example.com", "localhost",
			},
			wantIPs: []string{"10.5.0.100", "10.96.0.1", "127.0.0.1", "172.20.0.2", "fd00::2", "fd00:10:96::1"},
		},
		{
			name: "IP endpoint, custom domain, no extras",
			mutate: func(in *Inputs) {
				in.Endpoint = &url.URL{Scheme: "https", Host: "10.5.0.1:6443"}
				in.CertSANs, in.NodeAddresses, in.FQDN = nil, nil, ""
				in.DNSDomain = "corp.internal"
				in.ServiceSubnets = []string{"10.200.0.0/16"}
			},
			wantDNS: []string{
				"cp-1", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.corp.internal", "localhost",
			},
			wantIPs: []string{"10.5.0.1", "10.200.0.1", "127.0.0.1"},
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInputs(t, cas)
			if tt.mutate != nil {
				tt.mutate(&in)
			}

			certs, err := IssueStaticPodCerts(in)
			if err != nil {
				t.Fatal(err)
			}

			crt := mustCert(t, certs.APIServer.Crt)

			if !slices.Equal(crt.DNSNames, tt.wantDNS) {
				t.Errorf("DNSNames = %q\nwant        %q", crt.DNSNames, tt.wantDNS)
			}

			var ips []string
			for _, ip := range crt.IPAddresses {
				ips = append(ips, ip.String())
			}

			if !slices.Equal(ips, tt.wantIPs) {
				t.Errorf("IPAddresses = %q\nwant            %q", ips, tt.wantIPs)
			}

			for _, host := range append(slices.Clone(tt.wantDNS), tt.wantIPs...) {
				if err := crt.VerifyHostname(host); err != nil {
					t.Errorf("VerifyHostname(%s): %v", host, err)
				}
			}
		})
	}
}

func TestIssueStaticPodCertsErrors(t *testing.T) {
	cas := newTestCAs(t)

	leaf, err := pki.NewServerCertificate(cas.k8s, pki.ServerOptions{DNSNames: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		mutate func(*Inputs)
		want   string
	}{
		{"no endpoint", func(in *Inputs) { in.Endpoint = nil }, "endpoint is missing"},
		{"no CA", func(in *Inputs) { in.CA = nil }, "apiserver certificate: CA is missing"},
		{"CA without key", func(in *Inputs) { in.CA = &pki.CertAndKey{Crt: cas.k8s.Crt} }, "apiserver certificate: CA key is missing"},
		{"leaf as CA", func(in *Inputs) { in.CA = leaf }, "not a certificate authority"},
		{"CA key mismatch", func(in *Inputs) { in.CA = &pki.CertAndKey{Crt: cas.k8s.Crt, Key: cas.etcd.Key} }, "does not match"},
		{"no aggregator CA", func(in *Inputs) { in.AggregatorCA = nil }, "front-proxy-client certificate: CA is missing"},
		{"no etcd CA", func(in *Inputs) { in.EtcdCA = nil }, "etcd client certificate: CA is missing"},
		{"bad service subnet", func(in *Inputs) { in.ServiceSubnets = []string{"nope"} }, "apiserver certificate: service subnet"},
		{"no cluster name", func(in *Inputs) { in.ClusterName = "" }, "controller-manager kubeconfig: cluster name is missing"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInputs(t, cas)
			tt.mutate(&in)

			_, err := IssueStaticPodCerts(in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestServiceIPs(t *testing.T) {
	tests := []struct {
		name       string
		subnets    []string
		wantAPI    []string
		wantDNS    []string
		apiErr     bool
		dnsErr     bool
		errContain string
	}{
		{"default", []string{"10.96.0.0/12"}, []string{"10.96.0.1"}, []string{"10.96.0.10"}, false, false, ""},
		{"unmasked", []string{"10.96.5.7/12"}, []string{"10.96.0.1"}, []string{"10.96.0.10"}, false, false, ""},
		{"dual stack", []string{"10.96.0.0/12", "fd00:10:96::/108"}, []string{"10.96.0.1", "fd00:10:96::1"},
			[]string{"10.96.0.10", "fd00:10:96::a"}, false, false, ""},
		{"too small for DNS", []string{"10.0.0.0/29"}, []string{"10.0.0.1"}, nil, false, true, "too small"},
		{"single address", []string{"10.0.0.0/32"}, nil, nil, true, true, "too small"},
		{"invalid", []string{"10.0.0.0"}, nil, nil, true, true, "service subnet"},
		{"empty", nil, nil, nil, true, true, "no service subnet"},
	}

	check := func(t *testing.T, what string, got []netip.Addr, err error, want []string, wantErr bool, errContain string) {
		t.Helper()

		if wantErr {
			if err == nil || !strings.Contains(err.Error(), errContain) {
				t.Errorf("%s: error = %v, want one containing %q", what, err, errContain)
			}

			return
		}

		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}

		var s []string
		for _, ip := range got {
			s = append(s, ip.String())
		}

		if !slices.Equal(s, want) {
			t.Errorf("%s = %v, want %v", what, s, want)
		}
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api, err := APIServerIPs(tt.subnets)
			check(t, "APIServerIPs", api, err, tt.wantAPI, tt.apiErr, tt.errContain)

			dns, err := DNSServiceIPs(tt.subnets)
			check(t, "DNSServiceIPs", dns, err, tt.wantDNS, tt.dnsErr, tt.errContain)
		})
	}
}

func TestNeedsRenewal(t *testing.T) {
	cas := newTestCAs(t)

	pair, err := issueLeaf(cas.k8s, leafSpec{cn: "x"}, fixedNow, 100*time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	// The lifetime runs from NotBefore (now - 10 s) to NotAfter.
	half := fixedNow.Add(-notBeforeSkew).Add((100*time.Hour + notBeforeSkew) / 2)

	tests := []struct {
		name string
		pem  []byte
		at   time.Time
		want bool
	}{
		{"fresh", pair.Crt, fixedNow, false},
		{"just before half", pair.Crt, half.Add(-time.Second), false},
		{"at half", pair.Crt, half, true},
		{"after half", pair.Crt, fixedNow.Add(80 * time.Hour), true},
		{"expired", pair.Crt, fixedNow.Add(200 * time.Hour), true},
		{"not yet valid", pair.Crt, fixedNow.Add(-time.Hour), true},
		{"garbage", []byte("not a certificate"), fixedNow, true},
		{"empty", nil, fixedNow, true},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NeedsRenewal(tt.pem, tt.at); got != tt.want {
				t.Errorf("NeedsRenewal at %v = %v, want %v", tt.at, got, tt.want)
			}
		})
	}
}

func TestSANSetNormalize(t *testing.T) {
	var s sanSet

	for _, v := range []string{"B.example", "b.example", "[fd00::1]", "::ffff:10.0.0.1", "10.0.0.1", "", "a.example"} {
		s.add(v)
	}

	s.normalize()

	if want := []string{"a.example", "b.example"}; !slices.Equal(s.dns, want) {
		t.Errorf("dns = %v, want %v", s.dns, want)
	}

	if got := s.netIPs(); len(got) != 2 || !got[0].Equal(net.ParseIP("10.0.0.1")) || !got[1].Equal(net.ParseIP("fd00::1")) {
		t.Errorf("ips = %v, want [10.0.0.1 fd00::1]", got)
	}
}
