package dashboard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/configs/generate"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/apid/apidtest"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/configpatch"
	"github.com/talosbox/talosbox/internal/pki"
)

func TestScratch(t *testing.T) {
	b, err := pki.NewBundle(pki.BundleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, err := generate.Generate(generate.Options{ClusterName: "dash", Endpoint: "https://127.0.0.1:6443", Secrets: b})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := out.ControlPlane.Encode()
	patch, _ := configpatch.Parse([]byte("machine: {network: {hostname: node-a}, certSANs: [127.0.0.1]}"))
	data, err = configpatch.Apply(data, patch...)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, data, 0o600)
	nd := apidtest.Start(t, apidtest.Options{Dir: dir, ConfigPath: cfg, IP: "127.0.0.1", Name: "node-a"})
	nd.Console.Wait(t, time.Minute, "[talos] services: ")
	crt, _ := pki.NewClientCertificate(&b.Certs.OS, pki.ClientOptions{Roles: []string{"os:admin"}})
	c, err := client.New(client.Options{Endpoints: []string{nd.Addr}, CA: b.Certs.OS.Crt, Crt: crt.Crt, Key: crt.Key})
	if err != nil {
		t.Fatal(err)
	}
	ctx := client.WithNode(context.Background(), nd.Addr)
	defs, err := c.Resource.Definitions(ctx, &emptypb.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range defs.GetDefinitions() {
		fmt.Println("DEF", d.GetType(), d.GetDefaultNamespace())
	}
	for _, typ := range []string{"MachineStatuses.runtime.talos.dev", "NodeAddresses.net.talos.dev", "RouteStatuses.net.talos.dev", "HostnameStatuses.net.talos.dev", "ResolverStatuses.net.talos.dev", "TimeServerStatuses.net.talos.dev", "NetworkStatuses.net.talos.dev", "LinkStatuses.net.talos.dev", "AddressStatuses.net.talos.dev", "StaticPodStatuses.kubernetes.talos.dev", "MachineTypes.config.talos.dev", "Identities.cluster.talos.dev", "Members.cluster.talos.dev", "EtcdMembers.etcd.talos.dev", "KubeletSpecs.kubernetes.talos.dev", "Services.v1alpha1.talos.dev"} {
		s, err := c.Resource.List(ctx, &resource.ListRequest{Type: typ})
		if err != nil {
			t.Fatal(err)
		}
		for {
			m, err := s.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				fmt.Println("ERR", typ, err)
				break
			}
			if m.GetResource() != nil {
				fmt.Printf("RES %s %s:\n%s\n", typ, m.GetResource().GetMetadata().GetId(), m.GetResource().GetSpecYaml())
			}
		}
	}
	v, _ := c.Machine.Version(ctx, &emptypb.Empty{})
	fmt.Println("VERSION", v)
	h, _ := c.Machine.Hostname(ctx, &emptypb.Empty{})
	fmt.Println("HOST", h)
	sl, _ := c.Machine.ServiceList(ctx, &emptypb.Empty{})
	fmt.Println("SVC", sl)
	ls, err := c.Machine.Logs(ctx, &machine.LogsRequest{Namespace: "system", Id: "machined", TailLines: 5})
	if err != nil {
		t.Fatal(err)
	}
	for {
		m, err := ls.Recv()
		if err != nil {
			fmt.Println("LOGEND", err)
			break
		}
		fmt.Printf("LOG %q\n", m.GetBytes())
	}
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ds, err := c.Machine.Dmesg(dctx, &machine.DmesgRequest{Follow: false})
	if err == nil {
		for i := 0; i < 3; i++ {
			m, err := ds.Recv()
			if err != nil {
				fmt.Println("DMESGEND", err)
				break
			}
			fmt.Printf("DMESG %q\n", m.GetBytes())
		}
	}
	rs, err := c.Machine.Read(ctx, &machine.ReadRequest{Path: "/proc/net/dev"})
	if err == nil {
		for {
			m, err := rs.Recv()
			if err != nil {
				fmt.Println("READEND", err)
				break
			}
			fmt.Printf("READ %s\n", m.GetBytes())
		}
	}
}
