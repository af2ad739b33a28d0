package resources_test

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/resources"
	"github.com/talosbox/talosbox/internal/resources/block"
	"github.com/talosbox/talosbox/internal/resources/cluster"
	"github.com/talosbox/talosbox/internal/resources/config"
	"github.com/talosbox/talosbox/internal/resources/cri"
	"github.com/talosbox/talosbox/internal/resources/etcd"
	"github.com/talosbox/talosbox/internal/resources/k8s"
	"github.com/talosbox/talosbox/internal/resources/network"
	"github.com/talosbox/talosbox/internal/resources/runtime"
	"github.com/talosbox/talosbox/internal/resources/v1alpha1"
)

const module = "github.com/talosbox/talosbox"

// moduleImports maps every package of the module to the module packages it
// imports (tests excluded), as `go list` sees them.
func moduleImports(t *testing.T) (root string, graph map[string][]string) {
	t.Helper()

	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", module).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}

	root = strings.TrimSpace(string(out))

	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	cmd.Dir = root

	if out, err = cmd.Output(); err != nil {
		t.Fatalf("go list ./...: %v", err)
	}

	graph = map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))

	for sc.Scan() {
		f := strings.Fields(sc.Text())
		pkg := rel(f[0])
		graph[pkg] = nil

		for _, imp := range f[1:] {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				graph[pkg] = append(graph[pkg], rel(imp))
			}
		}
	}

	return root, graph
}

func rel(path string) string {
	if path == module {
		return "."
	}

	return strings.TrimPrefix(path, module+"/")
}

func under(pkg string, prefixes ...string) bool {
	for _, p := range prefixes {
		if pkg == p || strings.HasPrefix(pkg, p+"/") {
			return true
		}
	}

	return false
}

// TestNoUpwardImports keeps the layers apart: the resource types and the
// constants are the bottom that producers and consumers share, so they
// import nothing that produces or consumes; only the binary's wiring
// (main and applets) imports applets; the renderers never import the
// controllers that call them.
func TestNoUpwardImports(t *testing.T) {
	_, graph := moduleImports(t)

	rules := []struct {
		name  string
		from  func(pkg string) bool
		allow func(imp string) bool
	}{
		{
			name: "resource types import only the bus, the config schema and each other",
			from: func(p string) bool { return under(p, "internal/resources") },
			allow: func(i string) bool {
				return under(i, "internal/resources", "internal/bus", "internal/deepcopy", "configs") && !under(i, "configs/generate")
			},
		},
		{
			name:  "constants import nothing of the module",
			from:  func(p string) bool { return under(p, "internal/constants") },
			allow: func(string) bool { return false },
		},
		{
			name:  "the bus imports only its own helpers",
			from:  func(p string) bool { return p == "internal/bus" },
			allow: func(i string) bool { return under(i, "internal/deepcopy", "internal/levenshtein") },
		},
		{
			name: "libraries do not import applets or main",
			from: func(p string) bool {
				return !under(p, "applets", ".") && !strings.HasSuffix(p, "test") && p != "."
			},
			allow: func(i string) bool { return !under(i, "applets") && i != "." },
		},
		{
			name: "the Kubernetes renderer does not import the controllers",
			from: func(p string) bool { return under(p, "internal/k8s/render") },
			allow: func(i string) bool {
				return !under(i, "internal/k8s") || under(i, "internal/k8s/render", "internal/k8s/manifests")
			},
		},
		{
			name: "the container runtime does not import the node runtime, Kubernetes or the API",
			from: func(p string) bool { return under(p, "internal/cri") },
			allow: func(i string) bool {
				return !under(i, "internal/machine", "internal/k8s", "internal/apid")
			},
		},
		{
			name: "storage does not import the node runtime, Kubernetes or the API",
			from: func(p string) bool { return under(p, "internal/storage") },
			allow: func(i string) bool {
				return !under(i, "internal/machine", "internal/k8s", "internal/apid")
			},
		},
		{
			name: "the client side (the API client, the cluster checks and upgrades) does not import the node side",
			from: func(p string) bool { return under(p, "internal/client", "internal/cluster") },
			allow: func(i string) bool {
				return !under(i, "internal/machine", "internal/apid", "internal/k8s", "internal/storage", "internal/cri",
					"internal/controlplane", "internal/etcd", "internal/network")
			},
		},
		{
			name: "the config schema does not import the node",
			from: func(p string) bool { return under(p, "configs") },
			allow: func(i string) bool {
				return !under(i, "internal/machine", "internal/k8s", "internal/network", "internal/apid", "internal/resources")
			},
		},
	}

	for _, r := range rules {
		for pkg, imps := range graph {
			if !r.from(pkg) {
				continue
			}

			for _, imp := range imps {
				if !r.allow(imp) {
					t.Errorf("%s: %s imports %s", r.name, pkg, imp)
				}
			}
		}
	}

	if _, ok := graph["internal/resources/k8s"]; !ok {
		t.Fatal("the import graph misses internal/resources/k8s: is go list reading this module?")
	}
}

// typeName is a resource type's wire name ("StaticPods.kubernetes.talos.dev").
var typeName = regexp.MustCompile(`^[A-Z][A-Za-z]+\.[a-z0-9.]*talos\.dev$`)

// TestNoCopiedTypeNames finds resource type names spelled out in code
// outside internal/resources: a copy that can drift from the definition.
// Tests may spell them (they check the wire names); talosctl's meta
// types are its own.
func TestNoCopiedTypeNames(t *testing.T) {
	root, _ := moduleImports(t)
	fset := token.NewFileSet()
	found := 0

	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}

		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "_out" || name == "testdata") {
				return filepath.SkipDir
			}

			return nil
		}

		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || strings.HasSuffix(name, ".pb.go") {
			return nil
		}

		relPath, _ := filepath.Rel(root, path)

		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}

		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}

			s, err := strconv.Unquote(lit.Value)
			if err != nil || !typeName.MatchString(s) {
				return true
			}

			found++

			if under(filepath.ToSlash(filepath.Dir(relPath)), "internal/resources") || strings.HasSuffix(s, ".meta.talos.dev") {
				return true
			}

			t.Errorf("%s: resource type %q spelled out; use its constant from internal/resources", fset.Position(lit.Pos()), s)

			return true
		})

		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	if found < 40 {
		t.Fatalf("found only %d resource type names: is the walk reading internal/resources?", found)
	}
}

// TestDefinitionsAreUnique: each type is registered once, by its group,
// and every group is in the list a node registers.
func TestDefinitionsAreUnique(t *testing.T) {
	seen := map[string]bool{}

	for _, d := range resources.Definitions() {
		if seen[d.Type] {
			t.Errorf("%s is defined twice", d.Type)
		}

		seen[d.Type] = true
	}

	for _, want := range []string{
		config.MachineConfigType, runtime.MachineStatusType, v1alpha1.ServiceType, k8s.StaticPodType,
		network.LinkStatusType, cluster.MemberType, etcd.EtcdMemberType, block.DiskType, cri.RegistriesConfigType,
	} {
		if !seen[want] {
			t.Errorf("%s is not registered", want)
		}
	}
}
