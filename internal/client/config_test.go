package client

import "testing"

func TestMachineConfigText(t *testing.T) {
	raw := "version: v1alpha1\n# a comment\nmachine:\n    type: worker\n"

	for name, spec := range map[string]string{
		"raw":            raw,
		"wrapped text":   "config: |\n    version: v1alpha1\n    # a comment\n    machine:\n        type: worker\n",
		"wrapped object": "config:\n    version: v1alpha1\n    # a comment\n    machine:\n        type: worker\n",
	} {
		got, err := ConfigText([]byte(spec))
		if err != nil || string(got) != raw {
			t.Errorf("%s: got %q, %v; want %q", name, got, err, raw)
		}
	}
}
