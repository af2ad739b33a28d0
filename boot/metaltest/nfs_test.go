//go:build e2e

package metaltest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/imagebuild"
)

// serveNFS exports dir over NFSv4 (TCP 2049 on addr) with Debian's
// nfs-ganesha, a userspace server: this machine's kernel has no nfsd,
// and the QEMU guest's Debian kernel is the NFS client under test.
// /export is the pseudo path clients mount. It stops with the test.
func serveNFS(t *testing.T, addr, dir string) {
	t.Helper()

	state := t.TempDir()
	conf := filepath.Join(state, "ganesha.conf")
	log := filepath.Join(state, "ganesha.log")

	// Graceless: a fresh server has no clients to wait 90 s for.
	config := fmt.Sprintf(`NFS_CORE_PARAM {
	Protocols = 4;
	NFS_Port = 2049;
	Bind_addr = %s;
	Enable_NLM = false;
	Enable_RQUOTA = false;
}
NFSV4 {
	Graceless = true;
	RecoveryRoot = %q;
}
EXPORT {
	Export_Id = 1;
	Path = %q;
	Pseudo = /export;
	Access_Type = RW;
	Squash = No_Root_Squash;
	SecType = sys;
	Protocols = 4;
	Transports = TCP;
	FSAL { Name = VFS; }
}
`, addr, filepath.Join(state, "recovery"), dir)

	if err := os.WriteFile(conf, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}

	bin, err := exec.LookPath("ganesha.nfsd")
	if err != nil {
		t.Fatalf("no ganesha.nfsd (scripts/install-deps.sh installs nfs-ganesha): %v", err)
	}

	cmd := exec.Command(bin, "-F", "-f", conf, "-L", log, "-p", filepath.Join(state, "pid"), "-N", "NIV_EVENT")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	var waitErr error

	exited := make(chan struct{})

	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()

	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited

		if t.Failed() {
			b, _ := os.ReadFile(log)
			t.Logf("ganesha's log:\n%s", b)
		}
	})

	err = waitUntil(time.Minute, exited, func() error {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(addr, "2049"), time.Second)
		if err != nil {
			return err
		}

		return c.Close()
	})
	if err != nil {
		if errors.Is(err, errStopped) {
			<-exited
			b, _ := os.ReadFile(log)
			err = fmt.Errorf("ganesha.nfsd exited: %w\n%s", waitErr, b)
		}

		t.Fatalf("NFS server on %s: %v", addr, err)
	}
}

// testNodeStorage checks what a node gives storage drivers, on a running
// QEMU Kubernetes node: a pod mounts a directory the host serves over
// NFS both as an nfs volume and through an NFS PersistentVolume
// (mount.nfs runs in the kubelet's image; the node loaded no NFS module
// at boot, so the kernel asked /sbin/modprobe for fs-nfs4, then nfs for
// nfsv4), reads what the host wrote and writes back; and the Ceph
// clients Rook's CSI drivers use (rbd, ceph over libceph), which
// machine.kernel.modules named, are loaded.
func testNodeStorage(t *testing.T, c *vmCluster, root string, must func(...string) string) {
	t.Helper()

	host := c.cidr.Addr().Next().String()
	export := t.TempDir()

	if err := os.WriteFile(filepath.Join(export, "index.html"), []byte("served by the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	serveNFS(t, host, export)

	manifest := filepath.Join(t.TempDir(), "nfs.yaml")
	if err := os.WriteFile(manifest, []byte(fmt.Sprintf(nfsManifest, host, host, nfsImage)), 0o644); err != nil {
		t.Fatal(err)
	}

	start := time.Now()

	must("apply", "-f", manifest)
	must("wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/nfs-client", "--timeout=5m")
	t.Logf("a pod with an nfs volume and an NFS PersistentVolume, to done: %s", time.Since(start).Round(time.Second))

	if got := must("logs", "nfs-client"); got != "served by the host\nserved by the host\n" {
		t.Errorf("the pod read %q from its NFS volumes", got)
	}

	if b, err := os.ReadFile(filepath.Join(export, "from-pod")); err != nil || string(b) != "written by the pod\n" {
		t.Errorf("what the pod wrote through its NFS PersistentVolume: %q, %v", b, err)
	}

	mods := c.ok(commandTimeout, "-n", c.ip(0), "read", "/proc/modules")
	for _, m := range []string{"nfs", "nfsv4", "sunrpc", "rbd", "ceph", "libceph"} {
		if !regexp.MustCompile(`(?m)^` + m + ` `).MatchString(mods) {
			t.Errorf("module %s is not loaded:\n%s", m, mods)
		}
	}

	console, err := os.ReadFile(filepath.Join(c.state, c.name, c.name+"-controlplane-1", "console.log"))
	if err != nil {
		t.Fatal(err)
	}

	if boot := regexp.MustCompile(`\[talos\] loaded kernel modules .*`).Find(console); boot == nil || regexp.MustCompile(`\b(nfs|nfsv4|rbd|ceph)\b`).Match(boot) {
		t.Errorf("the boot modules: %q; want them without the NFS and Ceph clients", boot)
	}

	must("delete", "-f", manifest, "--wait=true", "--timeout=3m")
}

// nfsImage is the conformance busybox make images builds: it has sh and cat.
var nfsImage = "registry.k8s.io/e2e-test-images/busybox:" + imagebuild.BusyboxTag

// nfsManifest: the host (twice) and the image.
const nfsManifest = `apiVersion: v1
kind: PersistentVolume
metadata: {name: nfs-pv}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteMany]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  mountOptions: [nfsvers=4.1]
  nfs: {server: %s, path: /export}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: nfs-pvc}
spec:
  accessModes: [ReadWriteMany]
  storageClassName: ""
  volumeName: nfs-pv
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: nfs-client}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: %[3]s
    command: [sh, -c, "cat /inline/index.html /claim/index.html && echo written by the pod > /claim/from-pod"]
    volumeMounts:
    - {name: inline, mountPath: /inline}
    - {name: claim, mountPath: /claim}
  volumes:
  - name: inline
    nfs: {server: %[2]s, path: /export, readOnly: true}
  - name: claim
    persistentVolumeClaim: {claimName: nfs-pvc}
`
