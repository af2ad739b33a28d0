package configs

// securityKinds are the document kinds of Talos's security family
// (pkg/machinery/config/types/security) that talosbox implements; each kind's
// type, rules and folding live in a doc_<kind>.go file of its own.
var securityKinds = []kindInfo{}
