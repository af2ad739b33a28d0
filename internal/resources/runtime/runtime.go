package runtime

// The namespace, as Talos names it.
const (
	NamespaceRuntime = "runtime"
)
