package configs

// k8sKinds are the document kinds of Talos's k8s family
// (pkg/machinery/config/types/k8s) that talosbox implements; each kind's
// type, rules and folding live in a doc_<kind>.go file of its own.
var k8sKinds = []kindInfo{}
