// Command echo is the project's small HTTP image (docker.io/talosbox/echo):
// `echo serve` answers every request with the pod's hostname, and
// `echo get URL` fetches a URL and prints the body, so one image is both
// the server and the client of the Kubernetes end-to-end tests (a pod on
// another node reaching a Service by its ClusterIP and by its DNS name);
// `echo load URL` keeps requesting it and logs a tally (upgrade-k8s under load).
// Static, pure Go: its DNS lookups use /etc/resolv.conf, as a pod's should.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// version is stamped by internal/imagebuild.
var version = "dev"

func main() {
	args := os.Args[1:]
	if len(args) == 0 {
		args = []string{"serve"}
	}

	var err error

	switch args[0] {
	case "serve":
		err = serve(args[1:])
	case "get":
		err = get(args[1:])
	case "load":
		err = load(args[1:])
	case "-v", "--version", "version":
		fmt.Println("echo", version)
	default:
		err = fmt.Errorf("unknown command %q: want serve, get or load", args[0])
	}

	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", ":8080", "address to listen on")

	if err := fs.Parse(args); err != nil {
		return err
	}

	host, _ := os.Hostname()

	srv := &http.Server{
		Addr:              *addr,
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s\n", host)
		}),
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	go func() {
		<-ctx.Done()

		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()

		srv.Shutdown(shutdown) //nolint:errcheck // exiting either way
	}()

	fmt.Printf("echo %s serving %s on %s\n", version, host, *addr)

	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		return err
	}

	return nil
}

// get retries until the URL answers 200 or the timeout passes: a pod that
// starts before its Service's endpoints are programmed still succeeds.
func get(args []string) error {
	fs := flag.NewFlagSet("get", flag.ContinueOnError)
	timeout := fs.Duration("timeout", 60*time.Second, "how long to keep trying")

	if err := fs.Parse(args); err != nil {
		return err
	}

	if fs.NArg() != 1 {
		return fmt.Errorf("get wants one URL")
	}

	url := fs.Arg(0)
	deadline := time.Now().Add(*timeout)
	client := &http.Client{Timeout: 5 * time.Second}

	for {
		body, err := fetch(client, url)
		if err == nil {
			fmt.Print(body)
			return nil
		}

		if time.Now().After(deadline) {
			return fmt.Errorf("get %s: %w", url, err)
		}

		fmt.Fprintf(os.Stderr, "echo: get %s: %v (retrying)\n", url, err)
		time.Sleep(time.Second)
	}
}

func fetch(client *http.Client, url string) (string, error) {
	resp, err := client.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()

	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}

	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s", resp.Status)
	}

	return string(b), nil
}
