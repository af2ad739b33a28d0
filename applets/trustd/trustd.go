// Package trustd hands certificates to joining nodes that present the
// cluster's trustd token.
package trustd

import "github.com/talosbox/talosbox/internal/applet"

// Applet is trustd's entry in the multicall table.
var Applet = applet.Pending("trustd", "certificates for joining nodes, port 50001",
	"Sign certificate requests from joining nodes that present the trustd token,\nwith the OS CA, on :50001.",
	"issue 8")
