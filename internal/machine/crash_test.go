package machine_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/platform"
)

// The crash test runs nodes in child processes (this test binary,
// re-executed) and kills them with SIGKILL mid-apply.
const crashChildEnv = "TALOSBOX_CRASH_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		os.Exit(crashChild(dir))
	}

	os.Exit(m.Run())
}

// crashVersion is the i-th config the crash test applies.
func crashVersion(base []byte, i int) []byte {
	return bytes.Replace(base, []byte("hostname: crash-base"), []byte("hostname: crash-"+strconv.Itoa(i)), 1)
}

// crashChild boots a node from the persisted config and applies versions
// from $TALOSBOX_CRASH_START on, printing each one once the apply returned.
func crashChild(dir string) int {
	start, _ := strconv.Atoi(os.Getenv("TALOSBOX_CRASH_START"))

	base, err := os.ReadFile(filepath.Join(dir, "base.yaml"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}

	p, _ := platform.Detect(platform.Options{Flag: platform.Container, StateDir: dir})

	n, err := machine.New(machine.Options{Platform: p, Console: &bytes.Buffer{}, NoContainerd: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}

	ctx := context.Background()
	go n.Run(ctx) //nolint:errcheck // killed, never returns

	for n.ActiveConfig() == nil {
		time.Sleep(time.Millisecond)
	}

	fmt.Println("ready")

	for i := start; ; i++ {
		if _, err := n.ApplyConfiguration(ctx, crashVersion(base, i), machine.ApplyOptions{Mode: machine.ModeNoReboot}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}

		fmt.Println(i)
	}
}

// TestCrashSafetyKill9 kills the node at random points during 1,000
// applies: the persisted config must always parse and always be one of
// the versions applied (the last acknowledged one, or the one in flight).
func TestCrashSafetyKill9(t *testing.T) {
	const total = 1000

	dir := t.TempDir()
	base := workerConfig(t, hostname("crash-base"))

	if err := os.WriteFile(filepath.Join(dir, "base.yaml"), base, 0o600); err != nil {
		t.Fatal(err)
	}

	state := machine.State{Dir: filepath.Join(dir, "state")}
	if err := state.SaveConfig(base); err != nil {
		t.Fatal(err)
	}

	rng := rand.New(rand.NewPCG(42, uint64(time.Now().UnixNano())))
	acked := -1 // last version a child confirmed; -1 is the base config
	kills := 0

	for acked < total-1 {
		next := acked + 1

		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, "TALOSBOX_CRASH_START="+strconv.Itoa(next))

		var stderr bytes.Buffer
		cmd.Stderr = &stderr

		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}

		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}

		sc := bufio.NewScanner(out)
		if !sc.Scan() || sc.Text() != "ready" {
			cmd.Process.Kill() //nolint:errcheck
			cmd.Wait()         //nolint:errcheck
			t.Fatalf("child did not boot: %q\n%s", sc.Text(), stderr.String())
		}

		// Let it apply a random number of versions, then kill it after a
		// random extra delay so the kill lands anywhere in an apply.
		budget := 1 + rng.IntN(60)

		for range budget {
			if !sc.Scan() {
				break
			}

			v, err := strconv.Atoi(sc.Text())
			if err != nil {
				t.Fatalf("child said %q", sc.Text())
			}

			acked = v
		}

		time.Sleep(time.Duration(rng.IntN(1500)) * time.Microsecond) //nolint:forbidigo // a random kill point, not synchronisation

		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}

		// Lines printed before the kill landed are acknowledgements too.
		for sc.Scan() {
			if v, err := strconv.Atoi(sc.Text()); err == nil {
				acked = v
			}
		}

		cmd.Wait() //nolint:errcheck // killed
		kills++

		got, err := state.LoadConfig()
		if err != nil {
			t.Fatal(err)
		}

		ok := (acked == -1 && bytes.Equal(got, base)) ||
			(acked >= 0 && bytes.Equal(got, crashVersion(base, acked))) ||
			bytes.Equal(got, crashVersion(base, acked+1))

		if !ok {
			t.Fatalf("after kill %d (last acked %d) the persisted config is none of the applied versions:\n%s", kills, acked, got)
		}

		if entries, _ := os.ReadDir(state.Dir); len(entries) > 3 {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}

			if strings.Count(strings.Join(names, " "), ".tmp") > 1 {
				t.Fatalf("temporary files pile up in STATE: %v", names)
			}
		}
	}

	t.Logf("%d applies survived %d kills", acked+1, kills)
}
