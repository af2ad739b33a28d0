package configs

// clusterKinds are the document kinds of Talos's cluster family
// (pkg/machinery/config/types/cluster) that talosbox implements; each kind's
// type, rules and folding live in a doc_<kind>.go file of its own.
var clusterKinds = []kindInfo{}
