package configs

// runtimeKinds are the document kinds of Talos's runtime family
// (pkg/machinery/config/types/runtime) that talosbox implements; each kind's
// type, rules and folding live in a doc_<kind>.go file of its own.
var runtimeKinds = []kindInfo{}
