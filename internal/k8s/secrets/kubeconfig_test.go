package secrets

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/talosbox/talosbox/internal/pki"
)

type kubeconfigWant struct {
	cluster, server, user, context string
	cn                             string
	orgs                           []string
	lifetime                       time.Duration
}

// checkKubeconfig loads data the way kubectl does and checks its names,
// server, CA bundle and client certificate; it returns the client cert.
func checkKubeconfig(t *testing.T, data []byte, want kubeconfigWant, caBundle []byte, ca *pki.CertAndKey) *x509.Certificate {
	t.Helper()

	cfg, err := clientcmd.Load(data)
	if err != nil {
		t.Fatalf("clientcmd.Load: %v\n%s", err, data)
	}

	if cfg.CurrentContext != want.context {
		t.Errorf("current-context = %q, want %q", cfg.CurrentContext, want.context)
	}

	ctx := cfg.Contexts[want.context]
	if ctx == nil || len(cfg.Contexts) != 1 {
		t.Fatalf("contexts = %v, want only %q", cfg.Contexts, want.context)
	}

	if ctx.Cluster != want.cluster || ctx.AuthInfo != want.user || ctx.Namespace != "default" {
		t.Errorf("context = %+v, want cluster %q user %q namespace default", ctx, want.cluster, want.user)
	}

	cluster := cfg.Clusters[want.cluster]
	if cluster == nil || len(cfg.Clusters) != 1 {
		t.Fatalf("clusters = %v, want only %q", cfg.Clusters, want.cluster)
	}

	if cluster.Server != want.server {
		t.Errorf("server = %q, want %q", cluster.Server, want.server)
	}

	if !bytes.Equal(cluster.CertificateAuthorityData, caBundle) {
		t.Errorf("certificate-authority-data =\n%s\nwant\n%s", cluster.CertificateAuthorityData, caBundle)
	}

	user := cfg.AuthInfos[want.user]
	if user == nil || len(cfg.AuthInfos) != 1 {
		t.Fatalf("users = %v, want only %q", cfg.AuthInfos, want.user)
	}

	if want.cn == "" {
		return nil
	}

	if _, err := tls.X509KeyPair(user.ClientCertificateData, user.ClientKeyData); err != nil {
		t.Errorf("client certificate and key do not pair: %v", err)
	}

	crt := mustCert(t, user.ClientCertificateData)

	if crt.Subject.CommonName != want.cn || !slices.Equal(crt.Subject.Organization, want.orgs) {
		t.Errorf("client subject = %v, want CN=%s O=%v", crt.Subject, want.cn, want.orgs)
	}

	if err := verifyChain(crt, ca.Crt, x509.ExtKeyUsageClientAuth, fixedNow); err != nil {
		t.Errorf("client certificate does not verify against the cluster CA: %v", err)
	}

	if !crt.NotBefore.Equal(fixedNow.Add(-10*time.Second)) || crt.NotAfter.Sub(fixedNow) != want.lifetime {
		t.Errorf("validity %v..%v, want now-10s..now+%v", crt.NotBefore, crt.NotAfter, want.lifetime)
	}

	return crt
}

// The components' kubeconfigs: the controller-manager and the scheduler go
// through KubePrism when it is on, else to the node's own API server;
// Talos-internal admin access is always to the node's own API server.
func TestStaticPodKubeconfigs(t *testing.T) {
	cas := newTestCAs(t)

	for _, mode := range []struct {
		name       string
		prismPort  int
		components string
	}{
		{"own API server", 0, "https://localhost:7443"},
		{"kubeprism", 7445, "https://127.0.0.1:7445"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			in := testInputs(t, cas)
			in.LocalAPIServerPort = 7443
			in.KubePrismPort = mode.prismPort

			certs, err := IssueStaticPodCerts(in)
			if err != nil {
				t.Fatal(err)
			}

			bundle := AcceptedCABundle(in)
			if pemCount(bundle) != 2 {
				t.Fatalf("accepted CA bundle holds %d certificates, want 2", pemCount(bundle))
			}

			for _, tt := range []struct {
				name string
				data []byte
				want kubeconfigWant
			}{
				{"controller-manager", certs.ControllerManagerKubeconfig, kubeconfigWant{
					cluster: "talos-test", server: mode.components, user: "system:kube-controller-manager@talos-test",
					context: "default@talos-test", cn: "system:kube-controller-manager", orgs: []string{"system:kube-controller-manager"},
				}},
				{"scheduler", certs.SchedulerKubeconfig, kubeconfigWant{
					cluster: "talos-test", server: mode.components, user: "system:kube-scheduler@talos-test",
					context: "default@talos-test", cn: "system:kube-scheduler", orgs: []string{"system:kube-scheduler"},
				}},
				{"localhost admin", certs.LocalhostAdminKubeconfig, kubeconfigWant{
					cluster: "talos-test", server: "https://localhost:7443", user: "admin@talos-test",
					context: "admin@talos-test", cn: "talos:admin", orgs: []string{"system:masters"},
				}},
			} {
				t.Run(tt.name, func(t *testing.T) {
					tt.want.lifetime = DefaultValidity
					checkKubeconfig(t, tt.data, tt.want, bundle, cas.k8s)
				})
			}
		})
	}
}

func TestAdminKubeconfig(t *testing.T) {
	cas := newTestCAs(t)
	in := testInputs(t, cas)
	in.AdminKubeconfigLifetime = 48 * time.Hour

	want := kubeconfigWant{
		cluster: "talos-test", server: "https://k8s.example.com:6443", user: "admin@talos-test", context: "admin@talos-test",
		cn: "admin", orgs: []string{"system:masters"},
	}

	for _, tt := range []struct {
		name     string
		lifetime time.Duration
		want     time.Duration
	}{
		{"explicit lifetime", 5 * time.Hour, 5 * time.Hour},
		{"lifetime from config", 0, 48 * time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data, err := AdminKubeconfig(in, tt.lifetime)
			if err != nil {
				t.Fatal(err)
			}

			w := want
			w.lifetime = tt.want
			checkKubeconfig(t, data, w, AcceptedCABundle(in), cas.k8s)
		})
	}

	in.Endpoint = nil
	if _, err := AdminKubeconfig(in, 0); err == nil || !strings.Contains(err.Error(), "endpoint") {
		t.Errorf("no endpoint: error = %v", err)
	}
}

func TestBootstrapKubeconfig(t *testing.T) {
	cas := newTestCAs(t)
	bundle := AcceptedCABundle(Inputs{CA: cas.k8s, AcceptedCAs: [][]byte{cas.accepted.Crt}})

	data, err := BootstrapKubeconfig("https://k8s.example.com:6443", [][]byte{bundle}, testToken)
	if err != nil {
		t.Fatal(err)
	}

	checkKubeconfig(t, data, kubeconfigWant{
		cluster: "local", server: "https://k8s.example.com:6443", user: "kubelet@local", context: "kubelet@local",
	}, bundle, cas.k8s)

	cfg, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}

	if u := cfg.AuthInfos["kubelet@local"]; u.Token != testToken || len(u.ClientCertificateData) != 0 {
		t.Errorf("user = %+v, want token %q and no certificate", u, testToken)
	}

	for _, tt := range []struct {
		name, server, token string
		cas                 [][]byte
		want                string
	}{
		{"bad token", "https://x:6443", "abc", [][]byte{bundle}, "bootstrap token"},
		{"no server", "", testToken, [][]byte{bundle}, "server is required"},
		{"no CA", "https://x:6443", testToken, [][]byte{nil}, "CA certificate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := BootstrapKubeconfig(tt.server, tt.cas, tt.token); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestKubeconfigAuthChoice(t *testing.T) {
	cas := newTestCAs(t)
	base := KubeconfigOptions{ClusterName: "c", Server: "https://x:6443", User: "u", Context: "x", CAs: [][]byte{cas.k8s.Crt}}

	both := base
	both.Client, both.Token = cas.accepted, testToken

	missingName := base
	missingName.Token, missingName.User = testToken, ""

	for name, o := range map[string]KubeconfigOptions{"neither": base, "both": both, "no user": missingName} {
		if _, err := Kubeconfig(o); err == nil {
			t.Errorf("%s: Kubeconfig succeeded, want an error", name)
		}
	}
}

// TestKubeconfigsReachAPIServer proves the pieces fit together: client-go,
// given a generated kubeconfig, trusts the apiserver certificate for
// https://localhost:<port> and the server accepts its client certificate
// or bootstrap token.
func TestKubeconfigsReachAPIServer(t *testing.T) {
	cas := newTestCAs(t)
	in := testInputs(t, cas)
	in.Now = time.Now // TLS checks validity against the real clock

	seen := make(chan string, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if len(r.TLS.PeerCertificates) > 0 {
			who = r.TLS.PeerCertificates[0].Subject.CommonName
		}

		seen <- who

		_, _ = io.WriteString(w, `{"major":"1","minor":"34"}`)
	}))
	t.Cleanup(srv.Close)

	// The port is only known once listening, and the certificates must be
	// issued for it, so the TLS config is filled in before StartTLS.
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}

	if in.LocalAPIServerPort, err = strconv.Atoi(port); err != nil {
		t.Fatal(err)
	}

	certs, err := IssueStaticPodCerts(in)
	if err != nil {
		t.Fatal(err)
	}

	serving, err := certs.APIServer.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}

	clientCAs, err := pki.CertPool(AcceptedCABundle(in))
	if err != nil {
		t.Fatal(err)
	}

	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serving}, ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: clientCAs}
	srv.StartTLS()

	local := "https://localhost:" + port

	bootstrap, err := BootstrapKubeconfig(local, [][]byte{AcceptedCABundle(in)}, testToken)
	if err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name string
		data []byte
		want string
	}{
		{"controller-manager", certs.ControllerManagerKubeconfig, "system:kube-controller-manager"},
		{"scheduler", certs.SchedulerKubeconfig, "system:kube-scheduler"},
		{"localhost admin", certs.LocalhostAdminKubeconfig, "talos:admin"},
		{"bootstrap", bootstrap, testToken},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := clientcmd.RESTConfigFromKubeConfig(tt.data)
			if err != nil {
				t.Fatal(err)
			}

			client, err := rest.HTTPClientFor(cfg)
			if err != nil {
				t.Fatal(err)
			}

			resp, err := client.Get(cfg.Host + "/version")
			if err != nil {
				t.Fatalf("GET /version: %v", err)
			}

			_ = resp.Body.Close()

			if got := <-seen; got != tt.want || resp.StatusCode != http.StatusOK {
				t.Errorf("server saw %q (status %d), want %q", got, resp.StatusCode, tt.want)
			}
		})
	}
}
