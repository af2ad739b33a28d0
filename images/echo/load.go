package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// load sends a request to the URL every interval until it is stopped, and
// prints a tally every report period, so a test can read from the pod's
// log how a Service held up while the cluster under it changed:
//
//	2026-11-26T06:40:02.100Z ok=120 failed=0
//	2026-11-26T06:40:03.350Z FAIL get http://10.96.0.12/: context deadline exceeded
//
// A request is one failure, whatever went wrong (connect, timeout, a
// status other than 200); nothing is retried.
func load(args []string) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	interval := fs.Duration("interval", 100*time.Millisecond, "time between two requests")
	timeout := fs.Duration("timeout", 2*time.Second, "one request's timeout")
	report := fs.Duration("report", 2*time.Second, "time between two tallies")

	if err := fs.Parse(args); err != nil {
		return err
	}

	if fs.NArg() != 1 {
		return fmt.Errorf("load wants one URL")
	}

	url := fs.Arg(0)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	// A fresh connection per request: a kept-alive one would stay on one
	// endpoint and not see the Service's changes.
	client := &http.Client{Timeout: *timeout, Transport: &http.Transport{DisableKeepAlives: true}}

	var ok, failed int

	stamp := func() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000Z") }
	tally := func() { fmt.Printf("%s ok=%d failed=%d\n", stamp(), ok, failed) }

	tick := time.NewTicker(*interval)
	defer tick.Stop()

	reports := time.NewTicker(*report)
	defer reports.Stop()

	for {
		select {
		case <-ctx.Done():
			tally()
			return nil
		case <-reports.C:
			tally()
		case <-tick.C:
			if _, err := fetch(client, url); err != nil {
				failed++

				fmt.Fprintf(os.Stdout, "%s FAIL get %s: %v\n", stamp(), url, err)

				continue
			}

			ok++
		}
	}
}
