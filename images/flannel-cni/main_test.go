package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// cniBin is where make images leaves the CNI plugins this one delegates to.
func cniBin(t *testing.T) string {
	t.Helper()

	dir, _ := filepath.Abs(filepath.Join("..", "..", "_out", "images", "cni", "bin"))
	if _, err := os.Stat(filepath.Join(dir, "bridge")); err != nil {
		t.Fatalf("no CNI plugins in %s: run make images", dir)
	}

	return dir
}

// TestAddAndDelThroughBridge runs this plugin as the runtime does, against
// the real bridge and host-local plugins in a network namespace made for
// the test: ADD gives the pod an address in the node's flannel subnet and
// a route to the cluster network; DEL undoes it.
func TestAddAndDelThroughBridge(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("needs root (network namespaces); make test runs as root")
	}

	bins := cniBin(t)
	dir := t.TempDir()

	self := filepath.Join(dir, "flannel")
	if out, err := exec.Command("go", "build", "-o", self, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}

	ns := fmt.Sprintf("tbflannel%d", rand.IntN(1e6))
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v\n%s", err, out)
	}

	bridge := fmt.Sprintf("tbcni%d", rand.IntN(1e5))

	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "del", ns).Run()
		_ = exec.Command("ip", "link", "del", bridge).Run()
	})

	subnetEnv := filepath.Join(dir, "subnet.env")
	if err := os.WriteFile(subnetEnv, []byte("FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.7.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"cbr0","type":"flannel","subnetFile":%q,"dataDir":%q,
		"delegate":{"bridge":%q,"hairpinMode":true,"isDefaultGateway":true}}`, subnetEnv, filepath.Join(dir, "data"), bridge)

	wait := "FLANNEL_SUBNET_WAIT=15s"
	plugin := func(command string) (*exec.Cmd, *strings.Builder) {
		cmd := exec.Command(self)
		cmd.Stdin = strings.NewReader(conf)
		cmd.Env = append(os.Environ(), "CNI_COMMAND="+command, "CNI_CONTAINERID=c1", "CNI_NETNS=/var/run/netns/"+ns,
			"CNI_IFNAME=eth0", "CNI_PATH="+bins+":"+dir, wait)

		var out strings.Builder
		cmd.Stdout = &out

		return cmd, &out
	}
	run := func(command string) (string, error) {
		cmd, out := plugin(command)
		err := cmd.Run()

		return out.String(), err
	}

	// The node's first pods are added while flanneld is still leasing the
	// subnet: ADD waits for subnet.env instead of failing the sandbox.
	env, err := os.ReadFile(subnetEnv)
	if err != nil {
		t.Fatal(err)
	}

	if err := os.Remove(subnetEnv); err != nil {
		t.Fatal(err)
	}

	early, earlyOut := plugin("ADD")
	if err := early.Start(); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(subnetEnv, env, 0o644); err != nil {
		t.Fatal(err)
	}

	if err := early.Wait(); err != nil {
		t.Fatalf("ADD before flanneld wrote subnet.env: %v\n%s", err, earlyOut)
	}

	if out, err := run("DEL"); err != nil {
		t.Fatalf("DEL: %v\n%s", err, out)
	}

	out, err := run("ADD")
	if err != nil {
		t.Fatalf("ADD: %v\n%s", err, out)
	}

	var res struct {
		IPs    []struct{ Address string }
		Routes []struct{ Dst string }
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("ADD result %q: %v", out, err)
	}

	if len(res.IPs) != 1 {
		t.Fatalf("ADD result: %s", out)
	}

	ip, _, err := net.ParseCIDR(res.IPs[0].Address)
	if err != nil || !(&net.IPNet{IP: net.IPv4(10, 244, 7, 0), Mask: net.CIDRMask(24, 32)}).Contains(ip) {
		t.Errorf("pod address %s is not in the node's subnet 10.244.7.0/24", res.IPs[0].Address)
	}

	// The pod's interface has the address and the flannel MTU.
	link, err := exec.Command("ip", "-n", ns, "-o", "addr", "show", "eth0").CombinedOutput()
	if err != nil || !strings.Contains(string(link), ip.String()) {
		t.Errorf("eth0 in the pod: %v %s", err, link)
	}

	if mtu, _ := exec.Command("ip", "-n", ns, "link", "show", "eth0").CombinedOutput(); !strings.Contains(string(mtu), "mtu 1450") {
		t.Errorf("pod MTU: %s", mtu)
	}

	// CHECK gets ADD's result, as libcni passes it.
	addConf := conf
	conf = strings.TrimSuffix(strings.TrimSpace(conf), "}") + `,"prevResult":` + out + "}"

	if out, err := run("CHECK"); err != nil {
		t.Errorf("CHECK: %v %s", err, out)
	}

	conf = addConf

	if out, err := run("DEL"); err != nil {
		t.Fatalf("DEL: %v\n%s", err, out)
	}

	if _, err := os.Stat(filepath.Join(dir, "data", "c1")); !os.IsNotExist(err) {
		t.Errorf("the delegate config outlived DEL: %v", err)
	}

	if link, _ := exec.Command("ip", "-n", ns, "link", "show", "eth0").CombinedOutput(); !strings.Contains(string(link), "does not exist") {
		t.Errorf("eth0 after DEL: %s", link)
	}

	// A second DEL (the runtime retries) is not an error.
	if out, err := run("DEL"); err != nil {
		t.Errorf("second DEL: %v %s", err, out)
	}

	// Without flanneld's subnet.env ADD fails, once its wait is over, and
	// says why.
	if err := os.Remove(subnetEnv); err != nil {
		t.Fatal(err)
	}

	wait = "FLANNEL_SUBNET_WAIT=300ms"

	if out, err := run("ADD"); err == nil || !strings.Contains(out, "is flanneld running") {
		t.Errorf("ADD without subnet.env: %v %s", err, out)
	}
}

func TestInstall(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")

	if err := os.WriteFile(src, []byte("conf v1"), 0o755); err != nil {
		t.Fatal(err)
	}

	dst := filepath.Join(dir, "net.d", "10-flannel.conflist")

	for _, content := range []string{"conf v1", "conf v2"} {
		if err := os.WriteFile(src, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}

		if err := install(src, dst); err != nil {
			t.Fatal(err)
		}

		got, err := os.ReadFile(dst)
		if err != nil || string(got) != content {
			t.Fatalf("dst = %q, %v; want %q", got, err, content)
		}
	}

	if st, _ := os.Stat(dst); st.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, want 0755", st.Mode())
	}

	if ents, _ := os.ReadDir(filepath.Dir(dst)); len(ents) != 1 {
		t.Errorf("install left %d files: %v", len(ents), ents)
	}

	if err := install(filepath.Join(dir, "missing"), dst); err == nil {
		t.Error("install of a missing file succeeded")
	}
}
