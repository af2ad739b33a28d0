package kubeflags

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.flags from the parser")

// TestParseHelpOfRealBinaries parses excerpts of the --help that the
// Kubernetes 1.34.12 binary make images builds prints for each component
// (whole lines, some sections and usage lines left out), and compares the
// flags with testdata/<excerpt>.flags: "name type [deprecated]" per line.
// Each excerpt's flag lines were counted by hand against its .flags file.
func TestParseHelpOfRealBinaries(t *testing.T) {
	excerpts, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(excerpts) == 0 {
		t.Fatalf("no help excerpts in testdata: %v", err)
	}

	for _, name := range excerpts {
		t.Run(filepath.Base(name), func(t *testing.T) {
			help, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}

			flags, err := ParseHelp(string(help))
			if err != nil {
				t.Fatal(err)
			}

			var got strings.Builder

			for _, f := range flags {
				fmt.Fprintf(&got, "%s %s", f.Name, f.Type)

				if f.Deprecated {
					got.WriteString(" deprecated")
				}

				got.WriteByte('\n')
			}

			golden := strings.TrimSuffix(name, ".txt") + ".flags"

			if *update {
				if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}

			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}

			if got.String() != string(want) {
				t.Errorf("flags of %s:\n%s\nwant (%s):\n%s", name, got.String(), golden, want)
			}

			// Every line that starts like a flag is one, and no other.
			lines := 0

			for l := range strings.SplitSeq(string(help), "\n") {
				if strings.HasPrefix(l, "      --") || strings.HasPrefix(l, "  -") {
					lines++
				}
			}

			if lines != len(flags) {
				t.Errorf("%d flag lines, %d flags", lines, len(flags))
			}
		})
	}
}

func TestParseHelpShapes(t *testing.T) {
	for _, tt := range []struct {
		name, help string
		want       []Flag
		err        string
	}{
		{
			name: "types, bools, shorthands, NoOptDefVal",
			help: "Flags:\n" +
				"      --a-bool                 usage\n" +
				"      --b int                  usage (default 5)\n" +
				"  -v, --v Level                verbosity\n" +
				"      --version version[=true]   prints\n" +
				"      --quoted string[=\"a b]\"]   a string with a NoOptDefVal\n" +
				"      --negbool[=false]        a bool whose bare form is false\n" +
				"      --taints []v1.Taint      a type with brackets\n" +
				"      --last-bool\n" +
				"      --longest-flag-name-of-all duration  two spaces when there is no padding\n",
			want: []Flag{
				{Name: "a-bool", Type: "bool"}, {Name: "b", Type: "int"}, {Name: "last-bool", Type: "bool"},
				{Name: "longest-flag-name-of-all", Type: "duration"}, {Name: "negbool", Type: "bool"},
				{Name: "quoted", Type: "string"}, {Name: "taints", Type: "[]v1.Taint"},
				{Name: "v", Type: "Level"}, {Name: "version", Type: "version"},
			},
		},
		{
			name: "description before the flags is not read",
			help: "Long text that mentions\n      --not-a-flag in its body.\n\nUsage:\n  x [flags]\n\nFlags:\n      --real string   usage\n",
			want: []Flag{{Name: "real", Type: "string"}},
		},
		{
			name: "deprecated on a wrapped line, and not past its flag",
			help: "Generic flags:\n\n" +
				"      --gates mapStringBool   A set of gates:\n" +
				"                              A=true|false\n" +
				"\n" +
				"                              B=true|false (DEPRECATED: use the config file)\n" +
				"      --next string           not deprecated\n\n" +
				"Misc flags:\n\n" +
				"      --old int               DEPRECATED: going away\n" +
				"      --values string         master-count is deprecated (a value, not the flag)\n",
			want: []Flag{
				{Name: "gates", Type: "mapStringBool", Deprecated: true}, {Name: "next", Type: "string"},
				{Name: "old", Type: "int", Deprecated: true}, {Name: "values", Type: "string"},
			},
		},
		{
			name: "a flag in two sections is listed once",
			help: "A flags:\n      --x int   one\nB flags:\n      --x int   (DEPRECATED: two)\n",
			want: []Flag{{Name: "x", Type: "int", Deprecated: true}},
		},
		{
			name: "the same flag with two types",
			help: "A flags:\n      --x int   one\nB flags:\n      --x string   two\n",
			err:  `flag "x" listed as int and as string`,
		},
		{
			name: "no flags",
			help: "usage: kubernetes COMPONENT [flags], or run it through a link named COMPONENT\n",
			err:  "no flags",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseHelp(tt.help)

			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}

				return
			}

			if err != nil {
				t.Fatal(err)
			}

			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
