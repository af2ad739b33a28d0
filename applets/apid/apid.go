// Package apid is the node API: gRPC with mutual TLS on port 50000,
// proxying to other nodes.
package apid

import "github.com/talosbox/talosbox/internal/applet"

// Applet is apid's entry in the multicall table.
var Applet = applet.Pending("apid", "node API: gRPC, mutual TLS, port 50000",
	"Serve the node API on :50000 with mutual TLS, authorize every call by the\nclient certificate's role (os:admin, os:operator, os:reader) and proxy\nrequests naming other nodes to their apid.",
	"issue 5")
