// Command tiny stands in for talosbox in the provision tests: a small static PID 1 that
// reports what it sees (argv, hostname, environment, filesystem) as one JSON line, on stdout
// at start and to every TCP client, and exits 0 on SIGTERM as a well-behaved PID 1 must.
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
)

// report is what the tests check.
type report struct {
	Args          []string `json:"args"`
	Hostname      string   `json:"hostname"`
	Platform      string   `json:"platform"`
	Env           string   `json:"env"`
	TmpMode       string   `json:"tmpMode"`
	Applet        string   `json:"applet"`
	StateWritable bool     `json:"stateWritable"`
	Cat           string   `json:"cat"`
}

func main() {
	r := report{Args: os.Args, Platform: os.Getenv("TALOSBOX_PLATFORM"), Env: os.Getenv("TINY_ENV")}
	r.Hostname, _ = os.Hostname()
	if st, err := os.Stat("/tmp"); err == nil {
		r.TmpMode = st.Mode().String()
	}
	r.Applet, _ = os.Readlink("/usr/local/bin/tiny")
	if err := os.WriteFile("/var/lib/talosbox/.probe", []byte("x"), 0o600); err == nil {
		r.StateWritable = true
		_ = os.Remove("/var/lib/talosbox/.probe")
	}
	if p := os.Getenv("TINY_CAT"); p != "" {
		b, _ := os.ReadFile(p)
		r.Cat = string(b)
	}
	line, _ := json.Marshal(r)
	fmt.Println(string(line))

	addr := os.Getenv("TINY_LISTEN")
	if addr == "" {
		addr = ":8080"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tiny:", err)
		os.Exit(1)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write(append(line, '\n'))
			_ = c.Close()
		}
	}()

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	fmt.Println("tiny: exiting on", <-sig)
}
