package machine_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/machine"
)

// respell writes data again the way a person might: two-space indents,
// keys in reverse order, a comment, and the empty sections and zero
// values a config may spell out or leave out. The meaning is unchanged.
func respell(t *testing.T, data []byte) []byte {
	t.Helper()

	// Every document of the config: the v1alpha1 one and the typed ones
	// (a generated config's HostnameConfig).
	var docs []*yaml.Node

	dec := yaml.NewDecoder(bytes.NewReader(data))

	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}

		docs = append(docs, &doc)
	}

	root := docs[0].Content[0]
	root.HeadComment = "# the running config, written by hand"

	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "machine" {
			m := root.Content[i+1]
			m.Content = append(m.Content,
				&yaml.Node{Kind: yaml.ScalarNode, Value: "env"}, &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle},
				&yaml.Node{Kind: yaml.ScalarNode, Value: "files"}, &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle},
				&yaml.Node{Kind: yaml.ScalarNode, Value: "nodeLabels"}, &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle},
			)
		}
	}

	var buf bytes.Buffer

	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)

	for _, doc := range docs {
		reverseKeys(doc.Content[0])

		if err := enc.Encode(doc); err != nil {
			t.Fatal(err)
		}
	}

	if bytes.Equal(buf.Bytes(), data) {
		t.Fatal("respell changed nothing")
	}

	return buf.Bytes()
}

func reverseKeys(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		pairs := make([][2]*yaml.Node, 0, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			pairs = append(pairs, [2]*yaml.Node{n.Content[i], n.Content[i+1]})
		}

		slices.Reverse(pairs)

		n.Content = n.Content[:0]
		for _, p := range pairs {
			n.Content = append(n.Content, p[0], p[1])
		}
	}

	for _, c := range n.Content {
		reverseKeys(c)
	}
}

// An apply of the running config, however it is spelled, changes
// nothing in any mode: no reboot, no new config version, no write to
// STATE. machine.env and machine.files (spelled out empty here) need a
// reboot when they do change, so a text comparison would reboot.
func TestApplyOfTheRunningConfigIsANoOp(t *testing.T) {
	running := workerConfig(t, hostname("same"))
	n := startNode(t, "", running)
	ctx := context.Background()

	waitReady(t, n)

	statePath := filepath.Join(n.dir, "state", machine.ConfigFile)
	versions := func() [2]uint64 {
		t.Helper()

		var out [2]uint64

		for i, p := range []bus.Pointer{configPtr, stagePtr} {
			r, err := n.Store().Get(ctx, p)
			if err != nil {
				t.Fatal(err)
			}

			out[i] = r.Metadata().Version
		}

		return out
	}

	respelled := respell(t, running)

	tests := []struct {
		name string
		data []byte
		opts machine.ApplyOptions
	}{
		{"auto", respelled, machine.ApplyOptions{Mode: machine.ModeAuto}},
		{"no-reboot", respelled, machine.ApplyOptions{Mode: machine.ModeNoReboot}},
		{"reboot", respelled, machine.ApplyOptions{Mode: machine.ModeReboot}},
		{"staged", respelled, machine.ApplyOptions{Mode: machine.ModeStaged}},
		{"try", respelled, machine.ApplyOptions{Mode: machine.ModeTry}},
		{"the same text, reboot", running, machine.ApplyOptions{Mode: machine.ModeReboot}},
		{"dry run", respelled, machine.ApplyOptions{Mode: machine.ModeReboot, DryRun: true}},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := versions()

			res, err := n.ApplyConfiguration(ctx, tt.data, tt.opts)
			if err != nil {
				t.Fatal(err)
			}

			if res.Mode == machine.ModeReboot || !strings.Contains(res.Message, "No changes") && !strings.Contains(res.Message, "no changes") {
				t.Errorf("result %+v, want no reboot and a message saying there are no changes", res)
			}

			if res.Diff != "" {
				t.Errorf("diff %q, want none", res.Diff)
			}

			if after := versions(); after != before {
				t.Errorf("config and stage versions went from %v to %v: something was published or rebooted", before, after)
			}

			if stored, _ := os.ReadFile(statePath); !bytes.Equal(stored, running) {
				t.Errorf("the stored config was rewritten:\n%s", stored)
			}

			if n.TryPending() {
				t.Error("a try revert is pending")
			}
		})
	}

	// A stage waiting for the next boot: applying the running config
	// again undoes it (STATE gets the running config back) without a
	// reboot or a new version; after that it is a no-op again.
	if _, err := n.ApplyConfiguration(ctx, workerConfig(t, hostname("later")), machine.ApplyOptions{Mode: machine.ModeStaged}); err != nil {
		t.Fatal(err)
	}

	before := versions()

	res, err := n.ApplyConfiguration(ctx, respelled, machine.ApplyOptions{Mode: machine.ModeReboot})
	if err != nil || res.Mode != machine.ModeNoReboot || res.Message != "Applied configuration without a reboot" {
		t.Fatalf("apply over a stage: %+v %v", res, err)
	}

	if stored, _ := os.ReadFile(statePath); !bytes.Equal(stored, respelled) {
		t.Errorf("the stage was not undone: STATE holds\n%s", stored)
	}

	if after := versions(); after != before {
		t.Errorf("versions went from %v to %v", before, after)
	}

	if res, err := n.ApplyConfiguration(ctx, running, machine.ApplyOptions{Mode: machine.ModeAuto}); err != nil || !strings.Contains(res.Message, "no changes") {
		t.Fatalf("apply after the stage was undone: %+v %v", res, err)
	}

	if stored, _ := os.ReadFile(statePath); !bytes.Equal(stored, respelled) {
		t.Errorf("a no-op apply rewrote STATE:\n%s", stored)
	}
}

// TestInvalidApplyIsRefusedInEveryMode: every mode, --dry-run included,
// refuses an invalid config with what is wrong (not only that it needs a
// reboot: the change below, machine.files, does), and leaves the running
// config and STATE as they were; a config the renderers refuse is refused
// the same way.
func TestInvalidApplyIsRefusedInEveryMode(t *testing.T) {
	n := startNode(t, "", workerConfig(t))
	ctx := context.Background()

	waitReady(t, n)

	statePath := filepath.Join(n.dir, "state", machine.ConfigFile)

	running, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct{ name, patch, want string }{
		{"a file outside the node's writable places", "machine: {files: [{path: /etc/motd, op: create, content: hi}]}", `machine.files[0].path: path "/etc/motd" is not writable`},
		{"a kubelet flag the kubelet lacks", `machine: {kubelet: {extraArgs: {max-podz: "10"}}}`, `kubelet 1.34.12 has no flag --max-podz`},
		{"a CRI part that cannot merge", `machine: {files: [{path: /etc/cri/conf.d/20-customization.part, op: create, content: "[plugins]\n\"io.containerd.cri.v1.images\" = \"overlayfs\"\n"}]}`, `machine.files[0].content: cri:`},
	} {
		bad := workerConfig(t, tc.patch)

		for _, opts := range []machine.ApplyOptions{
			{Mode: machine.ModeNoReboot}, {Mode: machine.ModeNoReboot, DryRun: true}, {Mode: machine.ModeAuto},
			{Mode: machine.ModeReboot}, {Mode: machine.ModeStaged}, {Mode: machine.ModeTry},
		} {
			_, err := n.ApplyConfiguration(ctx, bad, opts)

			switch {
			case err == nil:
				t.Fatalf("%s: %+v accepted it", tc.name, opts)
			case !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "reboot"):
				t.Errorf("%s: %+v: %v, want it to say %q and nothing of a reboot", tc.name, opts, err, tc.want)
			}
		}
	}

	if stored, _ := os.ReadFile(statePath); !bytes.Equal(stored, running) {
		t.Errorf("STATE changed:\n%s", stored)
	}

	if got := n.ActiveConfig(); !bytes.Equal(got, running) {
		t.Errorf("the running config changed")
	}
}
