// Command flannel-cni is the "flannel" CNI plugin: it reads the subnet
// flanneld leased for this node (/run/flannel/subnet.env) and delegates to
// the bridge plugin with host-local addresses from that subnet, saving the
// delegate's config so DEL undoes exactly what ADD did. It plays the part
// of github.com/flannel-io/cni-plugin, which the module proxy does not
// serve, with the same network config and subnet.env format.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"
)

// buildVersion is flannel's, stamped by internal/imagebuild.
var buildVersion = "dev"

const (
	defaultSubnetFile = "/run/flannel/subnet.env"
	defaultDataDir    = "/var/lib/cni/flannel"
)

type netConf struct {
	types.NetConf

	SubnetFile string         `json:"subnetFile"`
	DataDir    string         `json:"dataDir"`
	Delegate   map[string]any `json:"delegate"`
}

// subnetEnv is what flanneld writes for the plugin.
type subnetEnv struct {
	networks []string
	subnet   string
	mtu      int
	ipMasq   bool
}

func loadConf(data []byte) (*netConf, error) {
	n := &netConf{SubnetFile: defaultSubnetFile, DataDir: defaultDataDir}
	if err := json.Unmarshal(data, n); err != nil {
		return nil, fmt.Errorf("flannel: network config: %w", err)
	}

	return n, nil
}

// subnetWait is how long ADD waits for flanneld's subnet.env
// (FLANNEL_SUBNET_WAIT, a Go duration, overrides it).
//
// The DaemonSet installs the CNI config in an init container, before
// flanneld has leased the node's subnet: the node turns Ready and the
// first pods (CoreDNS) are scheduled in between. An ADD that failed then
// cost the pod the kubelet's 10 s sync back-off (measured: CoreDNS
// started 13 s after flannel); waiting here costs the moment flanneld
// takes.
func subnetWait() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("FLANNEL_SUBNET_WAIT")); err == nil {
		return d
	}

	return 15 * time.Second
}

// waitSubnetEnv reads subnet.env, waiting up to wait for flanneld to write it.
func waitSubnetEnv(path string, wait time.Duration) (*subnetEnv, error) {
	deadline := time.Now().Add(wait)

	for {
		se, err := loadSubnetEnv(path)
		if err == nil || !errors.Is(err, fs.ErrNotExist) || time.Now().After(deadline) {
			return se, err
		}

		time.Sleep(100 * time.Millisecond)
	}
}

func loadSubnetEnv(path string) (*subnetEnv, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("flannel: %w (is flanneld running on this node?)", err)
	}
	defer f.Close()

	var se subnetEnv

	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok {
			continue
		}

		switch k {
		case "FLANNEL_NETWORK":
			se.networks = strings.Split(v, ",")
		case "FLANNEL_SUBNET":
			// flanneld writes the gateway's address (10.244.7.1/24);
			// host-local wants the network (10.244.7.0/24).
			_, n, err := net.ParseCIDR(v)
			if err != nil {
				return nil, fmt.Errorf("flannel: %s: FLANNEL_SUBNET=%q: %w", path, v, err)
			}

			se.subnet = n.String()
		case "FLANNEL_MTU":
			if se.mtu, err = strconv.Atoi(v); err != nil {
				return nil, fmt.Errorf("flannel: %s: FLANNEL_MTU=%q: %w", path, v, err)
			}
		case "FLANNEL_IPMASQ":
			se.ipMasq = v == "true"
		}
	}

	if err := sc.Err(); err != nil {
		return nil, err
	}

	if len(se.networks) == 0 || se.subnet == "" || se.mtu == 0 {
		return nil, fmt.Errorf("flannel: %s lacks FLANNEL_NETWORK, FLANNEL_SUBNET or FLANNEL_MTU", path)
	}

	return &se, nil
}

// delegateConf is the bridge config for this node's subnet, with the
// user's "delegate" settings on top.
func delegateConf(n *netConf, se *subnetEnv) ([]byte, string, error) {
	d := map[string]any{}
	for k, v := range n.Delegate {
		d[k] = v
	}

	setDefault := func(k string, v any) {
		if _, ok := d[k]; !ok {
			d[k] = v
		}
	}

	setDefault("type", "bridge")
	d["name"] = n.Name
	d["cniVersion"] = n.CNIVersion
	setDefault("mtu", se.mtu)

	if d["type"] == "bridge" {
		// flanneld masquerades itself when FLANNEL_IPMASQ is on.
		setDefault("ipMasq", !se.ipMasq)
		setDefault("isGateway", true)
	}

	routes := []map[string]string{}
	for _, nw := range se.networks {
		routes = append(routes, map[string]string{"dst": nw})
	}

	d["ipam"] = map[string]any{
		"type":   "host-local",
		"ranges": [][]map[string]string{{{"subnet": se.subnet}}},
		"routes": routes,
	}

	data, err := json.Marshal(d)
	typ, _ := d["type"].(string)

	return data, typ, err
}

func cmdAdd(args *skel.CmdArgs) error {
	n, err := loadConf(args.StdinData)
	if err != nil {
		return err
	}

	se, err := waitSubnetEnv(n.SubnetFile, subnetWait())
	if err != nil {
		return err
	}

	conf, typ, err := delegateConf(n, se)
	if err != nil {
		return err
	}

	if err := os.MkdirAll(n.DataDir, 0o700); err != nil {
		return err
	}

	if err := os.WriteFile(filepath.Join(n.DataDir, args.ContainerID), conf, 0o600); err != nil {
		return err
	}

	res, err := invoke.DelegateAdd(context.Background(), typ, conf, nil)
	if err != nil {
		return fmt.Errorf("flannel: delegate %s: %w", typ, err)
	}

	return types.PrintResult(res, n.CNIVersion)
}

// saved is the delegate config ADD stored, or nil after a DEL.
func saved(args *skel.CmdArgs) (*netConf, []byte, string, error) {
	n, err := loadConf(args.StdinData)
	if err != nil {
		return nil, nil, "", err
	}

	path := filepath.Join(n.DataDir, args.ContainerID)

	conf, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return n, nil, "", nil
	}

	if err != nil {
		return nil, nil, "", err
	}

	var t struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(conf, &t); err != nil {
		return nil, nil, "", fmt.Errorf("flannel: %s: %w", path, err)
	}

	return n, conf, t.Type, nil
}

func cmdDel(args *skel.CmdArgs) error {
	n, conf, typ, err := saved(args)
	if err != nil || conf == nil {
		return err
	}

	if err := invoke.DelegateDel(context.Background(), typ, conf, nil); err != nil {
		return fmt.Errorf("flannel: delegate %s: %w", typ, err)
	}

	return os.Remove(filepath.Join(n.DataDir, args.ContainerID))
}

func cmdCheck(args *skel.CmdArgs) error {
	_, conf, typ, err := saved(args)
	if err != nil {
		return err
	}

	if conf == nil {
		return fmt.Errorf("flannel: no saved config for container %s", args.ContainerID)
	}

	// The runtime hands CHECK the result of ADD; the delegate needs it.
	var in struct {
		PrevResult json.RawMessage `json:"prevResult"`
	}
	if err := json.Unmarshal(args.StdinData, &in); err != nil {
		return fmt.Errorf("flannel: network config: %w", err)
	}

	var d map[string]json.RawMessage
	if err := json.Unmarshal(conf, &d); err != nil {
		return err
	}

	if in.PrevResult != nil {
		d["prevResult"] = in.PrevResult
	}

	if conf, err = json.Marshal(d); err != nil {
		return err
	}

	return invoke.DelegateCheck(context.Background(), typ, conf, nil)
}

// install copies src to dst atomically (a temporary file beside dst, then
// a rename), keeping src's mode: the DaemonSet's init containers put the
// plugin into the host's /opt/cni/bin and the conflist into
// /etc/cni/net.d with it, as the image has no shell or cp. A reader (the
// CRI watching net.d, a pod being set up) sees the old file or the new.
func install(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}

	st, err := os.Stat(src)
	if err != nil {
		return err
	}

	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}

	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())

	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}

	if err := tmp.Chmod(st.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}

	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}

	if err := tmp.Close(); err != nil {
		return err
	}

	return os.Rename(tmp.Name(), dst)
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "install" {
		if len(os.Args) != 4 {
			fmt.Fprintln(os.Stderr, "usage: flannel install SRC DST")
			os.Exit(2)
		}

		if err := install(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "flannel install:", err)
			os.Exit(1)
		}

		fmt.Printf("installed %s\n", os.Args[3])

		return
	}

	skel.PluginMainFuncs(skel.CNIFuncs{Add: cmdAdd, Del: cmdDel, Check: cmdCheck}, version.All, "CNI flannel plugin "+buildVersion)
}
