package apid

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/pki"
	"github.com/talosbox/talosbox/internal/resources/runtime"
	"github.com/talosbox/talosbox/internal/role"
	"github.com/talosbox/talosbox/internal/trustd"
)

// invoke calls any method of the table with an empty request: unary
// methods through Invoke, streams by reading the first message.
func invoke(ctx context.Context, cc *grpc.ClientConn, method string) error {
	in, out, err := methodTypes(method)
	if err != nil {
		return err
	}

	if isStream(method) {
		cs, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, method)
		if err != nil {
			return err
		}

		if err := cs.SendMsg(in.New().Interface()); err != nil && err != io.EOF {
			return err
		}

		cs.CloseSend() //nolint:errcheck // the error shows on RecvMsg

		err = cs.RecvMsg(out.New().Interface())
		if err == io.EOF {
			return nil
		}

		return err
	}

	return cc.Invoke(ctx, method, in.New().Interface(), out.New().Interface())
}

func isStream(method string) bool {
	for _, sd := range []grpc.ServiceDesc{machine.MachineService_ServiceDesc, resource.ResourceService_ServiceDesc} {
		for _, s := range sd.Streams {
			if "/"+sd.ServiceName+"/"+s.StreamName == method {
				return true
			}
		}
	}

	return false
}

// handshake connects with TLS alone and reads: in TLS 1.3 the server's
// verdict on the client certificate arrives after the client's handshake.
func handshake(t *testing.T, addr string, cert *pki.CertAndKey) error {
	t.Helper()

	pool, _ := pki.CertPool(osCA().Crt)
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{"h2"}}

	if cert != nil {
		c, err := cert.TLSCertificate()
		if err != nil {
			t.Fatal(err)
		}

		// Presented whatever CAs the server asks for, so the server, not
		// the client's choice, decides.
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }
	}

	conn, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer conn.Close()

	if _, err := conn.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")); err != nil {
		return err
	}

	_, err = conn.Read(make([]byte, 1))

	return err
}

func TestRejectedClientCertificates(t *testing.T) {
	ca := osCA()

	otherCA, err := pki.NewCA(pki.CAOptions{Organization: "talos", CommonName: "other"})
	if err != nil {
		t.Fatal(err)
	}

	wrongCA, err := pki.NewClientCertificate(otherCA, pki.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}

	expired, err := pki.NewClientCertificate(ca, pki.ClientOptions{TTL: time.Hour, Now: func() time.Time { return time.Now().Add(-48 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}

	serverOnly, err := pki.NewServerCertificate(ca, pki.ServerOptions{CommonName: "node", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		t.Fatal(err)
	}

	// A certificate good for both ends: Talos refuses it as a client too.
	keyPEM, err := pki.GenerateKeyPEM(pki.Ed25519)
	if err != nil {
		t.Fatal(err)
	}

	csr, err := pki.NewCSR(keyPEM, pki.CSROptions{Organizations: []string{string(role.Admin)}})
	if err != nil {
		t.Fatal(err)
	}

	bothCrt, err := pki.SignCSR(ca, csr, pki.SignOptions{ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}})
	if err != nil {
		t.Fatal(err)
	}

	// Each is refused in the handshake (the TLS alert says why) and so
	// never reaches gRPC, where the client sees Unavailable.
	cases := []struct {
		name  string
		cert  *pki.CertAndKey
		alert string
	}{
		{"no client certificate", nil, "certificate required"},
		{"wrong CA", wrongCA, "unknown certificate authority"},
		{"expired", expired, "expired certificate"},
		{"server auth only", serverOnly, "bad certificate"},
		{"server and client", &pki.CertAndKey{Crt: bothCrt, Key: keyPEM}, "bad certificate"},
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := handshake(t, shared.addr, tc.cert); err == nil || !strings.Contains(err.Error(), tc.alert) {
				t.Fatalf("handshake: %v, want %q", err, tc.alert)
			}

			_, err := machineClient(dial(t, shared.addr, tc.cert)).Version(testCtx(t), &emptypb.Empty{})
			wantCode(t, err, codes.Unavailable, "")
		})
	}

	// The same connection path works with a proper certificate.
	if _, err := machineClient(dial(t, shared.addr, clientCert(t, string(role.Reader)))).Version(testCtx(t), &emptypb.Empty{}); err != nil {
		t.Fatal(err)
	}
}

// Every RPC that the table keeps from readers is refused to them, before
// any handler runs (so calling Reset here is safe).
func TestReaderDeniedMutations(t *testing.T) {
	cc := dial(t, shared.addr, clientCert(t, string(role.Reader)))

	denied := 0

	for method := range methodRoles {
		if allowed(method, []role.Role{role.Reader}) {
			continue
		}

		denied++

		t.Run(method, func(t *testing.T) {
			wantCode(t, invoke(testCtx(t), cc, method), codes.PermissionDenied, "os:reader")
		})
	}

	// Mutations and file contents at least.
	if denied < 11 {
		t.Fatalf("only %d methods are kept from readers", denied)
	}
}

// Operators get reader access plus the lifecycle of services and the
// node; admin-only methods stay closed.
func TestOperatorTable(t *testing.T) {
	cc := dial(t, shared.addr, clientCert(t, string(role.Operator)))
	mc := machineClient(cc)
	ctx := testCtx(t)

	for method, roles := range methodRoles {
		if len(roles) == 1 && roles[0] == role.Admin {
			wantCode(t, invoke(ctx, cc, method), codes.PermissionDenied, "os:operator")
		}
	}

	// Past authorization, the supervisor answers: an unknown service.
	_, err := mc.ServiceRestart(ctx, &machine.ServiceRestartRequest{Id: "nope"})
	wantCode(t, err, codes.NotFound, `"nope"`)

	_, err = mc.ServiceStop(ctx, &machine.ServiceStopRequest{Id: "nope"})
	wantCode(t, err, codes.NotFound, `"nope"`)

	if _, err := mc.ServiceList(ctx, &emptypb.Empty{}); err != nil {
		t.Fatal(err)
	}
}

// An operator reboots a node: the answer comes back, then the node goes
// through rebooting and comes back running, in-process (container mode).
func TestOperatorReboot(t *testing.T) {
	e := newEnv(t, nodeConfig(t, false, hostname("node-r")), "127.0.0.1:0")
	e.waitServing(t, false)
	e.waitReady(t)

	ctx := testCtx(t)

	w, err := e.node.Store().Watch(ctx, stagePtr)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	resp, err := machineClient(dial(t, e.addr, clientCert(t, string(role.Operator)))).Reboot(ctx, &machine.RebootRequest{})
	if err != nil {
		t.Fatal(err)
	}

	if resp.GetMessages()[0].GetActorId() == "" || resp.GetMessages()[0].GetMetadata().GetHostname() != "node-r" {
		t.Fatalf("reply %v", resp)
	}

	var seen []runtime.Stage

	for ev := range w.Events() {
		if st, ok := ev.Resource.(*runtime.MachineStage); ok {
			seen = append(seen, st.TypedSpec().Stage)
		}

		if len(seen) > 2 && seen[len(seen)-1] == runtime.StageRunning {
			break
		}
	}

	if !strings.Contains(strings.Join(stagesText(seen), " "), "rebooting booting") {
		t.Fatalf("stages %v", seen)
	}
}

func stagesText(st []runtime.Stage) []string {
	out := make([]string, len(st))
	for i, s := range st {
		out[i] = string(s)
	}

	return out
}

// Every RPC of every service the server registers has a row in the role
// table, and every row names a registered RPC.
func TestDescriptorCoverage(t *testing.T) {
	gs := shared.srv.newGRPCServer(shared.srv.identity())
	defer gs.Stop()

	registered := map[string]bool{}

	for svc, info := range gs.GetServiceInfo() {
		for _, m := range info.Methods {
			method := "/" + svc + "/" + m.Name
			registered[method] = true

			if _, ok := methodRoles[method]; !ok {
				t.Errorf("%s has no entry in methodRoles: it would be denied to everyone", method)
			}
		}
	}

	if len(registered) < 27 {
		t.Fatalf("only %d methods registered", len(registered))
	}

	for method := range methodRoles {
		if !registered[method] {
			t.Errorf("methodRoles names %s, which is not registered", method)
		}
	}

	for method := range maintenanceMethods {
		if !registered[method] {
			t.Errorf("maintenanceMethods names %s, which is not registered", method)
		}
	}

	// Unknown methods are refused by the gate itself.
	if allowed("/machine.MachineService/Unheard", []role.Role{role.Admin}) {
		t.Fatal("a method outside the table is allowed")
	}
}

// A worker has no CA key: apid waits, saying why, until trustd on the
// control plane issues its server certificate, then serves mutual TLS
// with it.
func TestWorkerCertificateFromTrustd(t *testing.T) {
	// trustd's address is known before it serves: the worker's first
	// attempts are refused.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	trustdAddr := lis.Addr().String()
	lis.Close()

	e := newEnvWith(t, nodeConfig(t, true, hostname("worker-1")), "127.0.0.1:0", func(o *Options) {
		o.TrustdEndpoints = []string{trustdAddr}
	})
	e.waitReady(t)

	ctx := testCtx(t)

	if err := e.srv.waitState(ctx, func(serving bool, id *identity) bool { return id != nil && id.err == errAwaitingCert && !serving }); err != nil {
		t.Fatalf("apid did not report %q: %v", errAwaitingCert, err)
	}

	if e.srv.Err() != errAwaitingCert {
		t.Fatalf("Err() = %v", e.srv.Err())
	}

	srv, err := trustd.NewServer(trustd.Options{
		CA:         osCA(),
		Token:      bundle.TrustdInfo.Token,
		ServerCert: trustd.ServerCertificate(osCA(), pki.ServerOptions{IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}),
	})
	if err != nil {
		t.Fatal(err)
	}

	tlis, err := net.Listen("tcp", trustdAddr)
	if err != nil {
		t.Fatal(err)
	}

	tctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)

	go func() { served <- srv.Serve(tctx, tlis) }()

	t.Cleanup(func() {
		cancel()
		<-served
	})

	e.waitServing(t, false)

	conn := dial(t, e.addr, clientCert(t, string(role.Reader)))

	v, err := machineClient(conn).Version(ctx, &emptypb.Empty{})
	if err != nil {
		t.Fatal(err)
	}

	if h := v.GetMessages()[0].GetMetadata().GetHostname(); h != "worker-1" {
		t.Fatalf("hostname %q", h)
	}

	if !strings.Contains(e.console.String(), "server certificate issued by trustd") {
		t.Fatalf("the console does not say where the certificate came from:\n%s", e.console.String())
	}
}

// An admin resets a node: it wipes STATE, comes back in maintenance mode,
// and apid follows it back to server-only TLS.
func TestResetBackToMaintenance(t *testing.T) {
	e := newEnv(t, nodeConfig(t, false, hostname("node-x")), "127.0.0.1:0")
	e.waitServing(t, false)

	ctx := testCtx(t)
	mc := machineClient(dial(t, e.addr, clientCert(t, string(role.Admin))))

	_, err := mc.Reset(ctx, &machine.ResetRequest{SystemPartitionsToWipe: []*machine.ResetPartitionSpec{{Label: "META", Wipe: true}}})
	wantCode(t, err, codes.InvalidArgument, `"META"`)

	resp, err := mc.Reset(ctx, &machine.ResetRequest{Reboot: true, SystemPartitionsToWipe: []*machine.ResetPartitionSpec{{Label: "STATE", Wipe: true}}})
	if err != nil || resp.GetMessages()[0].GetActorId() == "" {
		t.Fatalf("reset: %v %v", resp, err)
	}

	e.waitServing(t, true)

	v, err := machineClient(dialInsecure(t, e.addr)).Version(ctx, &emptypb.Empty{})
	if err != nil || !v.GetMessages()[0].GetMaintenance() {
		t.Fatalf("after reset: %v %v", v, err)
	}
}
