package applet

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/talosbox/talosbox/internal/version"
)

// Flags is a standard flag set for a service applet: usage on stderr,
// and --version handled the same way in every applet.
type Flags struct {
	*flag.FlagSet

	name    string
	env     Env
	version *bool
}

// NewFlags makes the flag set of applet name; usage is printed before
// the flag defaults on --help.
func NewFlags(name, usage string, env Env) *Flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprint(env.Stderr, usage)
		fs.PrintDefaults()
	}

	return &Flags{FlagSet: fs, name: name, env: env, version: fs.Bool("version", false, "print the version and exit")}
}

// Parse parses args. When done is true the applet exits with code at
// once: --help (0), --version (0, printed) or a bad flag (2, reported).
func (f *Flags) Parse(args []string) (code int, done bool) {
	if err := f.FlagSet.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, true
		}

		return 2, true
	}

	if *f.version {
		fmt.Fprintln(f.env.Stdout, version.Short(f.name))
		return 0, true
	}

	return 0, false
}

// List is a flag holding a list: comma-separated, and the flag may be
// given again to add more (--x a,b --x c is [a b c]), as etcd's URL flags
// and Talos's SAN flags take them.
type List []string

// String joins the list back with commas.
func (l *List) String() string { return strings.Join(*l, ",") }

// Set adds the comma-separated values of one occurrence; empty ones are
// dropped, so "a,,b" and a trailing comma are harmless.
func (l *List) Set(v string) error {
	for s := range strings.SplitSeq(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}

	return nil
}
