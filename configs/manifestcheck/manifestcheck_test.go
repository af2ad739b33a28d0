package manifestcheck_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs/manifestcheck"
	"github.com/talosbox/talosbox/internal/k8s/manifests"
)

// agree says whether Check and the node's manifests.Inline answer data
// alike.
func agree(t *testing.T, data []byte) {
	t.Helper()

	mine := manifestcheck.Check(data)
	_, theirs := manifests.Inline("x", string(data))

	if (mine == nil) != (theirs == nil) {
		t.Errorf("%q: Check says %v, the node %v", data, mine, theirs)
	}
}

var docs = []string{
	"",
	"\n\n",
	"# only a comment\n",
	"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n",
	"kind: Namespace\n",
	"apiVersion: v1\n",
	"apiVersion: v1\nkind: 5\n",
	"apiVersion: 1\nkind: Namespace\n",
	"apiVersion: v1\nkind: \"\"\n",
	"- a\n- b\n",
	"just a string\n",
	"42\n",
	"null\n",
	"~\n",
	"---\n---\n",
	"---\napiVersion: v1\nkind: Namespace\n---\n",
	"--- # a comment\napiVersion: v1\nkind: Namespace\n",
	"---x\napiVersion: v1\nkind: Namespace\n",
	"apiVersion: v1\nkind: Namespace\n---\nkind: Namespace\n",
	"apiVersion: v1\nkind: Namespace\n--- !tag\napiVersion: v1\nkind: Namespace\n",
	"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n",
	"apiVersion: v1\nkind: List\nitems: [1]\n",
	"apiVersion: v1\nkind: ConfigMap\nitems: [1]\n",
	"apiVersion: v1\nkind: ConfigMap\nitems: 1\n",
	"apiVersion: v1\nkind: ConfigMapList\nitems: []\n",
	"apiVersion: v1\nkind: List\nitems:\n- {}\n",
	"apiVersion: v1\nkind: Namespace\nkind: Secret\n",
	"apiVersion: v1\nkind: Namespace\n1: x\ntrue: y\n1.5: z\n",
	"apiVersion: v1\nkind: Namespace\n[a]: x\n",
	"apiVersion: v1\nkind: Namespace\n{a: 1}: x\n",
	"apiVersion: v1\nkind: Namespace\nx: .nan\n",
	"apiVersion: v1\nkind: Namespace\nx: .inf\n",
	"apiVersion: v1\r\nkind: Namespace\r\n",
	"apiVersion: v1\nkind: Namespace\nx: &a [*a]\n",
	"apiVersion: v1\nkind: Namespace\nx: *missing\n",
	"apiVersion: v1\nkind: Namespace\nx: !!binary aGVsbG8=\n",
	"apiVersion: v1\nkind: Namespace\nx: !!int abc\n",
	"apiVersion: v1\nkind: Namespace\n  bad indent: 1\n",
	"\tapiVersion: v1\n",
	"{\"apiVersion\": \"v1\", \"kind\": \"Namespace\"}",
	"apiVersion: v1\nkind: Namespace\nx: 2001-12-14t21:59:43.10-05:00\n",
	"apiVersion: v1\nkind: Namespace\nx: 0x1F\ny: 0o17\nz: 1_000\n",
	"apiVersion: v1\nkind: Namespace\nx: \"\\x00\"\n",
	"%YAML 1.2\n---\napiVersion: v1\nkind: Namespace\n",
	"apiVersion: v1\nkind: Namespace\n...\n",
}

// TestAgreesWithTheNode: manifests the node takes or refuses for every
// reason it has, and YAML's corners.
func TestAgreesWithTheNode(t *testing.T) {
	for _, d := range docs {
		agree(t, []byte(d))
	}
}

// FuzzAgreesWithTheNode looks for a manifest the two answer differently.
func FuzzAgreesWithTheNode(f *testing.F) {
	for _, d := range docs {
		f.Add([]byte(d))
	}

	f.Fuzz(func(t *testing.T, data []byte) { agree(t, data) })
}
