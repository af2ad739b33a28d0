// Command pause is the pod sandbox's process (registry.k8s.io/pause): it
// holds the pod's namespaces open, reaps the zombies that end up as its
// children (it is PID 1 of the pod's PID namespace when that is shared),
// and exits on SIGINT or SIGTERM. It uses only the syscall package, so
// the static binary stays around a megabyte.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

// version is stamped by internal/imagebuild (-X main.version=3.10).
var version = "dev"

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "-v" || os.Args[1] == "--version") {
		os.Stdout.WriteString("pause.go v" + version + "\n")
		return
	}

	if os.Getpid() != 1 {
		os.Stderr.WriteString("Warning: pause should be the first process\n")
	}

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)

	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			os.Stderr.WriteString("Shutting down, got signal: " + sig.String() + "\n")
			os.Exit(0)
		}

		reap()
	}
}

// reap collects every exited child; one SIGCHLD may stand for several.
func reap() {
	for {
		var ws syscall.WaitStatus

		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
