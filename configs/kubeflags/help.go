package kubeflags

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// flagLine is one flag as pflag's FlagUsages prints it: "  -v, --v Level"
// or "      --name TYPE[=NOOPT]", then at least two spaces and the usage.
// The indent is exactly 2 (with a shorthand) or 6: a wrapped usage line is
// indented further, so it never matches.
var flagLine = regexp.MustCompile(`^(?:  -[^ ], |      )--([A-Za-z0-9][A-Za-z0-9_.-]*)(.*)$`)

// ParseHelp reads the flags out of a component's --help: every line pflag
// prints for a flag, after the first "...flags:" header (the command's
// description comes before it). A flag without a type word is a bool;
// one whose usage says DEPRECATED is marked so. The flags come back
// sorted by name. It is for the generator (internal/imagebuild).
func ParseHelp(help string) ([]Flag, error) {
	var (
		flags   []Flag
		usage   []string // the usage lines of the last flag
		inFlags bool
	)

	// end closes the last flag: its usage, wrapped or not, is complete.
	end := func() {
		if len(flags) > 0 && isDeprecated(strings.Join(usage, " ")) {
			flags[len(flags)-1].Deprecated = true
		}

		usage = nil
	}

	for line := range strings.SplitSeq(help, "\n") {
		line = strings.TrimRight(line, " \r")

		if !inFlags {
			inFlags = strings.HasSuffix(strings.ToLower(line), "flags:")
			continue
		}

		m := flagLine.FindStringSubmatch(line)

		switch {
		case m != nil:
			end()

			typ, rest := flagType(m[2])
			flags = append(flags, Flag{Name: m[1], Type: typ})
			usage = []string{rest}
		case line == "" || strings.HasPrefix(line, "   "):
			usage = append(usage, line) // a wrapped usage line, or a blank one in it
		default:
			end() // a section header, or the text after the flags
		}
	}

	end()

	if len(flags) == 0 {
		return nil, errors.New("kubeflags: no flags in the help text")
	}

	slices.SortStableFunc(flags, func(a, b Flag) int { return strings.Compare(a.Name, b.Name) })

	out := flags[:0]

	for _, f := range flags {
		if n := len(out); n > 0 && out[n-1].Name == f.Name {
			if out[n-1].Type != f.Type {
				return nil, fmt.Errorf("kubeflags: flag %q listed as %s and as %s", f.Name, out[n-1].Type, f.Type)
			}

			out[n-1].Deprecated = out[n-1].Deprecated || f.Deprecated

			continue
		}

		out = append(out, f)
	}

	return out, nil
}

// flagType splits what follows a flag's name into its type and the usage.
// pflag prints " TYPE" right after the name (with "[=NOOPT]" when the
// flag may be given without a value) and then at least two spaces; a bool
// has no type word, so two spaces or the end of the line follow at once.
func flagType(rest string) (typ, usage string) {
	if !strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, "  ") {
		// "[=false]" right after the name is a bool with another NoOptDefVal.
		return "bool", strings.TrimSpace(skipNoOpt(rest))
	}

	rest = rest[1:]

	end := strings.IndexByte(rest, ' ')
	if end < 0 {
		end = len(rest)
	}

	// The word may hold brackets of its own ("[]v1.Taint"); "[=" starts
	// the NoOptDefVal ("version[=true]").
	if i := strings.Index(rest[:end], "[="); i > 0 {
		return rest[:i], strings.TrimSpace(skipNoOpt(rest[i:]))
	}

	return rest[:end], strings.TrimSpace(rest[end:])
}

// skipNoOpt drops a leading "[=NOOPT]"; a string's is quoted and may hold
// spaces or brackets.
func skipNoOpt(s string) string {
	if !strings.HasPrefix(s, "[=") {
		return s
	}

	if strings.HasPrefix(s, `[="`) {
		if i := strings.Index(s, `"]`); i >= 0 {
			return s[i+2:]
		}
	}

	if i := strings.IndexByte(s, ']'); i >= 0 {
		return s[i+1:]
	}

	return s
}

// isDeprecated is how Kubernetes marks a listed flag as deprecated in its
// usage: "(DEPRECATED: ...)" on the kubelet's config-file flags,
// "[DEPRECATED] ..." or "DEPRECATED: ..." elsewhere. pflag's own
// MarkDeprecated hides a flag from --help altogether.
func isDeprecated(usage string) bool {
	return strings.Contains(usage, "DEPRECATED")
}
