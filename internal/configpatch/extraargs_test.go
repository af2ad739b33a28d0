package configpatch

import "testing"

// argsBase has extraArgs in both forms, in v1alpha1 and in a document.
const argsBase = `version: v1alpha1
machine:
    certSANs:
        - 10.0.0.1
    kubelet:
        extraArgs:
            node-labels:
                - a=b
                - c=d
            v: "2"
cluster:
    apiServer:
        extraArgs:
            feature-gates: A=true
---
apiVersion: v1alpha1
kind: KubeletConfig
extraArgs:
    node-labels:
        - a=b
`

// TestStrategicMergeExtraArgs: a patch replaces an extraArgs flag's value
// whole, list or string, as Talos's Args.Merge does (a list is not
// appended to), and keeps the flags it does not name; other lists still
// append.
func TestStrategicMergeExtraArgs(t *testing.T) {
	for _, tc := range []struct {
		name, patch string
		pairs       []string // replaceLines' pairs on argsBase
	}{
		{
			name:  "a list replaces a list, the other flags stay",
			patch: "machine:\n  kubelet:\n    extraArgs:\n      node-labels: [e=f]\n",
			pairs: []string{"            node-labels:\n                - a=b\n                - c=d\n", "            node-labels:\n                - e=f\n"},
		},
		{
			name:  "a string replaces a list",
			patch: "machine:\n  kubelet:\n    extraArgs:\n      node-labels: e=f\n",
			pairs: []string{"            node-labels:\n                - a=b\n                - c=d\n", "            node-labels: e=f\n"},
		},
		{
			name:  "a list replaces a string; a new flag is added",
			patch: "cluster:\n  apiServer:\n    extraArgs:\n      feature-gates: [B=true, C=false]\n      v: \"3\"\n",
			pairs: []string{"            feature-gates: A=true\n", "            feature-gates:\n                - B=true\n                - C=false\n            v: \"3\"\n"},
		},
		{
			name:  "an empty list replaces a list",
			patch: "machine:\n  kubelet:\n    extraArgs:\n      node-labels: []\n",
			pairs: []string{"            node-labels:\n                - a=b\n                - c=d\n", "            node-labels: []\n"},
		},
		{
			name:  "$patch: delete removes a flag",
			patch: "machine:\n  kubelet:\n    extraArgs:\n      node-labels:\n        $patch: delete\n",
			pairs: []string{"            node-labels:\n                - a=b\n                - c=d\n", ""},
		},
		{
			name:  "other lists still append",
			patch: "machine:\n  certSANs: [10.0.0.2]\n  kubelet:\n    extraArgs:\n      node-labels: [c=d]\n",
			pairs: []string{
				"        - 10.0.0.1\n", "        - 10.0.0.1\n        - 10.0.0.2\n",
				"            node-labels:\n                - a=b\n                - c=d\n", "            node-labels:\n                - c=d\n",
			},
		},
		{
			name:  "in a document too",
			patch: "apiVersion: v1alpha1\nkind: KubeletConfig\nextraArgs:\n  node-labels: [x=y]\n",
			pairs: []string{"extraArgs:\n    node-labels:\n        - a=b\n", "extraArgs:\n    node-labels:\n        - x=y\n"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := mustApply(t, argsBase, tc.patch), replaceLines(t, argsBase, tc.pairs...); got != want {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
