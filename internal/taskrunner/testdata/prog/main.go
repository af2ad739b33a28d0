// Command prog is what the taskrunner tests run in a container. It prints
// what it sees from inside (namespaces, OOM score, capabilities, its
// environment and arguments), then exits or waits as its flags say.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	exit := flag.Int("exit", 0, "exit status")
	wait := flag.Bool("wait", false, `print "ready", then wait for SIGTERM`)
	ignore := flag.Bool("ignore-term", false, `print "ready", then outlive SIGTERM`)
	cat := flag.String("cat", "", "a file to print")
	orphan := flag.Bool("orphan", false, "leave a child holding stdout behind, which outlives SIGTERM")
	flag.Parse()

	// Notify before "ready", so that a SIGTERM sent once the test saw it
	// is caught rather than ignored (PID 1 of a namespace ignores signals
	// it has no handler for) or fatal.
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)

	fmt.Println("hello from the task")
	fmt.Fprintln(os.Stderr, "hello from stderr")
	fmt.Printf("args=%q\n", os.Args[1:])
	fmt.Printf("env FOO=%s\n", os.Getenv("FOO"))

	for _, ns := range []string{"net", "pid"} {
		link, err := os.Readlink("/proc/self/ns/" + ns)
		fmt.Printf("ns %s=%s %v\n", ns, link, err)
	}

	oom, err := os.ReadFile("/proc/self/oom_score_adj")
	fmt.Printf("oom=%s %v\n", strings.TrimSpace(string(oom)), err)
	fmt.Printf("capeff=%s\n", capEff())

	if *cat != "" {
		b, err := os.ReadFile(*cat)
		fmt.Printf("cat %s=%q %v\n", *cat, b, err)
	}

	if *orphan {
		p, err := os.StartProcess("/proc/self/exe", []string{os.Args[0], "-ignore-term"},
			&os.ProcAttr{Files: []*os.File{nil, os.Stdout, os.Stderr}})
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}

		fmt.Printf("orphan=%d\n", p.Pid)
	}

	switch {
	case *wait:
		fmt.Println("ready")
		<-term
		fmt.Println("got SIGTERM")
	case *ignore:
		fmt.Println("ready")

		for range term {
			fmt.Println("ignoring SIGTERM")
		}
	}

	os.Exit(*exit)
}

// capEff is the effective capability set, in hex as the kernel shows it.
func capEff() string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return err.Error()
	}
	defer f.Close()

	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "CapEff:"); ok {
			return strings.TrimSpace(v)
		}
	}

	return "unknown"
}
