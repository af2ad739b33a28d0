package version

import "testing"

func TestOSRelease(t *testing.T) {
	for _, tc := range []struct{ tag, want string }{
		{"v1.2.3", "NAME=talosbox\nID=talosbox\nPRETTY_NAME=\"talosbox (v1.2.3)\"\nVERSION_ID=v1.2.3\n"},
		{"", "NAME=talosbox\nID=talosbox\nPRETTY_NAME=\"talosbox\"\n"},
		// Nothing that would need quoting survives.
		{"v1\"; rm -rf /", "NAME=talosbox\nID=talosbox\nPRETTY_NAME=\"talosbox (v1rm-rf)\"\nVERSION_ID=v1rm-rf\n"},
	} {
		if got := string(OSRelease(tc.tag)); got != tc.want {
			t.Errorf("OSRelease(%q) = %q, want %q", tc.tag, got, tc.want)
		}
	}
}
