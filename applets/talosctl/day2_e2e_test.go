package talosctl_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/timed/timedtest"
)

// TestDay2Commands runs the operators' everyday commands against a real
// in-process node (its apid, its bus, this machine's kernel): usage,
// netstat, time, inspect dependencies, restart, pcap and wipe disk, and
// checks each one's shape and that it reports what really is there.
func TestDay2Commands(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a node")
	}

	dir := t.TempDir()
	if code, _, errOut := runCtl("gen", "config", "day2", "https://10.5.0.2:6443", "-o", dir); code != 0 {
		t.Fatalf("gen config: %s", errOut)
	}

	n := startRealNode(t, dir, "127.0.0.1", "node-1")
	talosconfig := filepath.Join(dir, "talosconfig")
	base := []string{"--talosconfig", talosconfig, "-e", n.addr, "-n", n.addr}

	d := &day2{node: n, dir: dir, talosconfig: talosconfig, base: base}
	run, ok := d.run, d.ok

	t.Run("usage", func(t *testing.T) {
		tree := t.TempDir()
		for path, size := range map[string]int{"a/one": 1000, "a/b/two": 2000, "three": 300} {
			if err := os.MkdirAll(filepath.Join(tree, filepath.Dir(path)), 0o755); err != nil {
				t.Fatal(err)
			}

			if err := os.WriteFile(filepath.Join(tree, path), bytes.Repeat([]byte("x"), size), 0o644); err != nil {
				t.Fatal(err)
			}
		}

		dirSize := func(p string) int64 {
			fi, err := os.Stat(filepath.Join(tree, p))
			if err != nil {
				t.Fatal(err)
			}

			return fi.Size()
		}

		b := dirSize("a/b") + 2000
		a := dirSize("a") + 1000 + b
		root := dirSize(".") + a + 300

		table := func(rows ...string) string {
			var buf bytes.Buffer

			w := tabwriter.NewWriter(&buf, 0, 0, 3, ' ', 0)
			fmt.Fprintln(w, "SIZE\tNAME")

			for _, r := range rows {
				fmt.Fprintln(w, r)
			}

			w.Flush()

			return buf.String()
		}

		// Talos's default depth shows the path asked for only.
		if out, want := ok(t, "usage", tree), table(fmt.Sprintf("%d\t.", root)); out != want {
			t.Errorf("usage:\n%s\nwant:\n%s", out, want)
		}

		if out, want := ok(t, "usage", tree, "--depth", "2"), table(fmt.Sprintf("%d\ta/b", b), fmt.Sprintf("%d\ta", a), fmt.Sprintf("%d\t.", root)); out != want {
			t.Errorf("usage --depth 2:\n%s\nwant:\n%s", out, want)
		}

		if out, want := ok(t, "du", tree, "--all", "--depth", "1"), table(fmt.Sprintf("%d\ta", a), "300\tthree", fmt.Sprintf("%d\t.", root)); out != want {
			t.Errorf("du --all --depth 1:\n%s\nwant:\n%s", out, want)
		}

		if out := ok(t, "usage", tree, "-a", "-d", "5", "--threshold", "1500"); strings.Contains(out, "three") || !strings.Contains(out, "a/b/two") {
			t.Errorf("usage --threshold 1500 should keep a/b/two and drop three:\n%s", out)
		}

		if _, errOut, code := run(t, "usage", filepath.Join(tree, "missing")); code == 0 || !strings.Contains(errOut, "no such file or directory") {
			t.Errorf("usage of a missing path: exit %d, stderr %q", code, errOut)
		}
	})

	t.Run("netstat", func(t *testing.T) {
		out := ok(t, "netstat", "-l", "-t", "-p")

		// apid's own listener, held by this process.
		line := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(n.addr) + `\s+tcp\s+0\s+0\s+` + regexp.QuoteMeta(n.addr) + `\s+0\.0\.0\.0:\*\s+LISTEN\s+` + fmt.Sprint(os.Getpid()) + `/\S+$`)
		header := regexp.MustCompile(`^NODE\s+Proto\s+Recv-Q\s+Send-Q\s+Local Address\s+Foreign Address\s+State\s+PID/Program name\n`)
		if !header.MatchString(out) || !line.MatchString(out) {
			t.Errorf("netstat -ltp lacks apid's listener %s held by pid %d:\n%s", n.addr, os.Getpid(), out)
		}

		// The test's connection to apid is established, not listening.
		out = ok(t, "ss", "-t")
		if strings.Contains(out, "LISTEN") || !strings.Contains(out, "ESTABLISHED") {
			t.Errorf("netstat (connected) should list established sockets only:\n%s", out)
		}

		u, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer u.Close()

		if out := ok(t, "netstat", "-lu"); !strings.Contains(out, " "+u.LocalAddr().String()+" ") {
			t.Errorf("netstat -lu lacks the UDP socket %s:\n%s", u.LocalAddr(), out)
		}
	})

	t.Run("time", func(t *testing.T) {
		server := timedtest.StartChrony(t)

		out := ok(t, "time", "--check", server)
		fields := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(n.addr) + `\s+` + regexp.QuoteMeta(server) + `\s+(\S+ \S+ \S+ \S+)\s+(\S+ \S+ \S+ \S+)$`).FindStringSubmatch(out)
		if fields == nil || !regexp.MustCompile(`^NODE\s+NTP-SERVER\s+NODE-TIME\s+NTP-SERVER-TIME\n`).MatchString(out) {
			t.Fatalf("time --check has no row for %s:\n%s", server, out)
		}

		local, err1 := time.Parse("2006-01-02 15:04:05.999999999 -0700 MST", fields[1])
		remote, err2 := time.Parse("2006-01-02 15:04:05.999999999 -0700 MST", fields[2])
		if err1 != nil || err2 != nil {
			t.Fatalf("times do not parse: %v %v", err1, err2)
		}

		// chronyd -x serves this machine's clock: they agree closely.
		if d := remote.Sub(local); d > time.Second || d < -time.Second {
			t.Errorf("node and server differ by %v; both are this machine's clock", d)
		}

		// Without --check the node's configured servers are asked; this
		// node has the default, which cannot be reached offline, so the
		// error names it.
		if _, errOut, code := run(t, "time", "--check", net.JoinHostPort("127.0.0.1", fmt.Sprint(timedtest.FreeUDPPort(t)))); code == 0 || !strings.Contains(errOut, "time server 127.0.0.1:") {
			t.Errorf("time against a dead server: exit %d, stderr %q", code, errOut)
		}
	})

	t.Run("inspect dependencies", func(t *testing.T) {
		out := ok(t, "inspect", "dependencies")
		for _, want := range []string{"digraph {", `"runtime.MachineStatusController" [shape=box`, `"runtime.MachineStatusController" -> "MachineStatuses.runtime.talos.dev"`, `"MachineStages.runtime.talos.dev" -> "runtime.MachineStatusController"`} {
			if !strings.Contains(out, want) {
				t.Errorf("inspect dependencies lacks %q:\n%s", want, out)
			}
		}

		cmd := exec.Command(tool(t, "dot"), "-Tsvg")
		cmd.Stdin = strings.NewReader(out)

		if b, err := cmd.CombinedOutput(); err != nil || !bytes.Contains(b, []byte("runtime.MachineStatusController")) {
			t.Errorf("graphviz refuses the graph: %v: %s", err, b)
		}

		// With the live resources: each in its type's cluster, drawn from
		// the controller that owns it.
		out = ok(t, "inspect", "dependencies", "--with-resources")
		for _, want := range []string{`subgraph "cluster_MachineStatuses.runtime.talos.dev"`,
			`"runtime.MachineStatusController" -> "runtime/MachineStatuses.runtime.talos.dev/machine"`,
			`"runtime/MachineStages.runtime.talos.dev/machine" -> "runtime.MachineStatusController"`} {
			if !strings.Contains(out, want) {
				t.Errorf("inspect dependencies --with-resources lacks %q:\n%s", want, out)
			}
		}

		cmd = exec.Command(tool(t, "dot"), "-Tsvg")
		cmd.Stdin = strings.NewReader(out)

		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("graphviz refuses the graph with resources: %v: %s", err, b)
		}
	})

	t.Run("restart", func(t *testing.T) {
		if _, errOut, code := run(t, "restart", "machined"); code == 0 || !strings.Contains(errOut, "the node API runs on it") {
			t.Errorf("restart machined: exit %d, stderr %q", code, errOut)
		}

		// Without containerd, an unknown ID reaches the containerd lookup,
		// which says plainly that it is not there.
		if _, errOut, code := run(t, "restart", "nosuchservice"); code == 0 || !strings.Contains(errOut, "containerd is not running") {
			t.Errorf("restart of an unknown ID: exit %d, stderr %q", code, errOut)
		}
	})

	t.Run("pcap", func(t *testing.T) {
		recv, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer recv.Close()

		port := recv.LocalAddr().(*net.UDPAddr).Port
		// tcpdump compiles the filter, as the command's help says to.
		compiled, err := exec.Command(tool(t, "tcpdump"), "-dd", "-y", "EN10MB", fmt.Sprintf("ip and udp dst port %d", port)).Output()
		if err != nil {
			t.Fatalf("tcpdump -dd: %v", err)
		}

		filter := string(compiled)

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()

		out, errOut := newOutput(), newOutput()
		code := make(chan int, 1)

		go func() {
			code <- ctl(ctx, out, errOut, append(base, "pcap", "-i", "lo", "--bpf-filter", filter, "-o", "-")...)
		}()

		send, err := net.DialUDP("udp4", nil, recv.LocalAddr().(*net.UDPAddr))
		if err != nil {
			t.Fatal(err)
		}
		defer send.Close()

		payload := []byte("day2-pcap-probe")

		// The capture starts some time after the call: send until a
		// datagram shows up in the stream.
		sendUntil(t, send, payload, out, errOut, string(payload))

		cancel()

		if c := <-code; c != 0 {
			t.Fatalf("pcap cancelled: exit %d, stderr %q", c, errOut)
		}

		r, err := pcapgo.NewReader(strings.NewReader(out.String()))
		if err != nil {
			t.Fatalf("pcap -o - is not a pcap file: %v", err)
		}

		for {
			data, _, err := r.ReadPacketData()
			if err != nil {
				break
			}

			p := gopacket.NewPacket(data, r.LinkType(), gopacket.Default)
			udp, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
			if udp == nil || int(udp.DstPort) != port || !bytes.Equal(udp.Payload, payload) {
				t.Errorf("the filter let through %v", p)
			}
		}

		// Without -o each packet is a line, as tcpdump prints it.
		pctx, pcancel := context.WithCancel(context.Background())
		defer pcancel()

		lines, lineErr := newOutput(), newOutput()
		printed := make(chan int, 1)

		go func() {
			printed <- ctl(pctx, lines, lineErr, append(base, "pcap", "-i", "lo", "--bpf-filter", filter)...)
		}()

		wantLine := fmt.Sprintf("IP 127.0.0.1.%d > 127.0.0.1.%d: UDP, length %d", send.LocalAddr().(*net.UDPAddr).Port, port, len(payload))

		sendUntil(t, send, payload, lines, lineErr, wantLine)

		pcancel()

		if c := <-printed; c != 0 {
			t.Fatalf("pcap (printing) cancelled: exit %d, stderr %q", c, lineErr)
		}

		// tcpdump reads the file and finds the datagram.
		capture := filepath.Join(t.TempDir(), "lo.pcap")
		if err := os.WriteFile(capture, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}

		dump, err := exec.Command(tool(t, "tcpdump"), "-n", "-r", capture).CombinedOutput()
		if err != nil || !strings.Contains(string(dump), fmt.Sprintf("127.0.0.1.%d: UDP, length %d", port, len(payload))) {
			t.Errorf("tcpdump -r: %v:\n%s", err, dump)
		}

		if _, errOut, code := run(t, "pcap", "-i", "nosuchif0", "--duration", "5s"); code == 0 || !strings.Contains(errOut, `interface "nosuchif0"`) {
			t.Errorf("pcap on a missing interface: exit %d, stderr %q", code, errOut)
		}

		if _, errOut, code := run(t, "pcap", "--bpf-filter", "tcp port 80"); code == 0 || !strings.Contains(errOut, "tcpdump -dd") {
			t.Errorf("pcap with an uncompiled filter: exit %d, stderr %q", code, errOut)
		}
	})

	// wipe disk on a real loop device: refused while mounted (the kernel
	// says it is busy), wiped once unmounted; blkid is the judge.
	t.Run("wipe disk", func(t *testing.T) {
		img := filepath.Join(t.TempDir(), "disk.img")
		if err := os.WriteFile(img, nil, 0o644); err != nil {
			t.Fatal(err)
		}

		if err := os.Truncate(img, 64<<20); err != nil {
			t.Fatal(err)
		}

		if b, err := exec.Command(tool(t, "mkfs.ext4"), "-q", "-F", img).CombinedOutput(); err != nil {
			t.Fatalf("mkfs.ext4: %v: %s", err, b)
		}

		b, err := exec.Command(tool(t, "losetup"), "--find", "--show", img).Output()
		if err != nil {
			t.Fatalf("losetup: %v", err)
		}

		loop := strings.TrimSpace(string(b))
		t.Cleanup(func() { exec.Command("losetup", "-d", loop).Run() }) //nolint:errcheck

		mnt := t.TempDir()
		if b, err := exec.Command("mount", loop, mnt).CombinedOutput(); err != nil {
			t.Fatalf("mount: %v: %s", err, b)
		}

		mounted := true
		t.Cleanup(func() {
			if mounted {
				exec.Command("umount", mnt).Run() //nolint:errcheck
			}
		})

		name := filepath.Base(loop)

		if _, errOut, code := run(t, "wipe", "disk", name); code == 0 || !strings.Contains(errOut, "in use: mounted") {
			t.Errorf("wipe of a mounted device: exit %d, stderr %q", code, errOut)
		}

		if _, errOut, code := run(t, "wipe", "disk", "nosuchdisk"); code == 0 || !strings.Contains(errOut, `no block device "nosuchdisk"`) {
			t.Errorf("wipe of a missing device: exit %d, stderr %q", code, errOut)
		}

		if _, errOut, code := run(t, "wipe", "disk", name, "--method", "SHRED"); code == 0 || !strings.Contains(errOut, `invalid wipe method "SHRED"`) {
			t.Errorf("wipe with a bad method: exit %d, stderr %q", code, errOut)
		}

		if b, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Fatalf("umount: %v: %s", err, b)
		}

		mounted = false

		ok(t, "wipe", "disk", "/dev/"+name)

		if b, _ := exec.Command(tool(t, "blkid"), "-p", "-o", "value", "-s", "TYPE", loop).Output(); strings.TrimSpace(string(b)) != "" {
			t.Errorf("blkid still finds %q on %s", b, loop)
		}
	})

	t.Run("security state and extensions", func(t *testing.T) {
		st := machine.ReadSecurityState("", "")
		row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(n.addr) + `\s+runtime\s+SecurityState\s+securitystate\s+1\s+` +
			fmt.Sprint(st.SecureBoot) + `\s+` + st.SELinuxState + `\s*` + map[bool]string{true: "true"}[st.ModuleSignatureEnforced] + `$`)

		out := ok(t, "get", "securitystate")
		if !strings.Contains(out, "SECUREBOOT   UKISIGNINGKEYFINGERPRINT   PCRSIGNINGKEYFINGERPRINT   SELINUXSTATE   MODULESIGNATUREENFORCED") || !row.MatchString(out) {
			t.Errorf("get securitystate (want %+v):\n%s", st, out)
		}

		// This process's root has no extensions.
		if out, errOut, code := run(t, "get", "extensions"); code != 0 || strings.TrimSpace(out) != "" && !strings.HasPrefix(out, "NODE") {
			t.Errorf("get extensions: exit %d: %s%s", code, out, errOut)
		}
	})

	t.Run("support", func(t *testing.T) { testSupportInProcess(t, d) })

	// cgroups reads the node's /sys/fs/cgroup: this machine's. On cgroup v2
	// it prints the tree; on a host with v1 hierarchies it says so.
	t.Run("cgroups", func(t *testing.T) {
		out, errOut, code := run(t, "cgroups", "--preset", "process")

		if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
			if code == 0 || !strings.Contains(errOut, "is not cgroup v2") {
				t.Errorf("cgroups on a v1 host: exit %d, stderr %q", code, errOut)
			}
		} else if code != 0 || !regexp.MustCompile(`^NAME\s+PidsCurrent\s+PidsPeak\s+PidsMax\s+Procs\s+Threads\s+Processes\n\.\s`).MatchString(out) {
			t.Errorf("cgroups --preset process: exit %d\n%s%s", code, out, errOut)
		}

		if _, errOut, code := run(t, "cgroups", "--preset", "gpu"); code == 0 || !strings.Contains(errOut, `invalid preset name: "gpu"`) {
			t.Errorf("cgroups with an unknown preset: exit %d, stderr %q", code, errOut)
		}
	})

	t.Run("roles", func(t *testing.T) {
		reader := filepath.Join(t.TempDir(), "talosconfig")
		ok(t, "config", "new", reader, "--roles", "os:reader")

		as := func(args ...string) (string, int) {
			out, errOut := newOutput(), newOutput()
			code := ctl(context.Background(), out, errOut, append([]string{"--talosconfig", reader, "-e", n.addr, "-n", n.addr}, args...)...)

			return errOut.String(), code
		}

		if errOut, code := as("netstat"); code != 0 {
			t.Errorf("a reader's netstat: exit %d: %s", code, errOut)
		}

		for _, args := range [][]string{{"pcap", "-i", "lo", "--duration", "1s"}, {"restart", "timed"}, {"wipe", "disk", "loop0"}} {
			if errOut, code := as(args...); code == 0 || !strings.Contains(errOut, "denied: it needs one of [os:admin") {
				t.Errorf("a reader's %v: exit %d, stderr %q", args, code, errOut)
			}
		}
	})

	t.Run("secrets resources", func(t *testing.T) { testSecretsInProcess(t, d) })

	t.Run("rotate-ca", func(t *testing.T) { testRotateCAInProcess(t, d) })
}

// sendUntil sends payload every 100 ms (or as soon as out grows) until
// out holds want, failing after 30 s.
func sendUntil(t *testing.T, send net.Conn, payload []byte, out, errOut *output, want string) {
	t.Helper()

	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), want); {
		if time.Now().After(deadline) {
			t.Fatalf("pcap gave no %q within 30s; stderr %q", want, errOut)
		}

		if _, err := send.Write(payload); err != nil {
			t.Fatal(err)
		}

		select {
		case <-out.next():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// tool finds a Debian tool a test judges by; scripts/install-deps.sh
// installs it, so a missing one fails the test.
func tool(t *testing.T, name string) string {
	t.Helper()

	for _, p := range []string{name, "/usr/sbin/" + name, "/usr/bin/" + name} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}

	t.Fatalf("%s is required: run scripts/install-deps.sh", name)

	return ""
}
