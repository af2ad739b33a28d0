package version

import "strings"

// OSRelease is the node's /etc/os-release for a build tagged tag: what the
// kubelet reports as the node's OS image (kubectl get nodes -o wide shows
// "talosbox (v1.2.3)", as Talos's shows "Talos (v1.11.0)") and what tools
// and people read to tell what the machine runs. The tag is cut to the
// characters a tag has, so that it never needs shell quoting.
func OSRelease(tag string) []byte {
	tag = strings.Map(func(r rune) rune {
		if r < 0x80 && (r == '.' || r == '-' || r == '+' || r == '_' || r == '~' ||
			'0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
			return r
		}

		return -1
	}, tag)

	pretty := "talosbox"
	if tag != "" {
		pretty += " (" + tag + ")"
	}

	out := "NAME=talosbox\nID=talosbox\nPRETTY_NAME=\"" + pretty + "\"\n"
	if tag != "" {
		out += "VERSION_ID=" + tag + "\n"
	}

	return []byte(out)
}
