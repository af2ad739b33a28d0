package runtime

const (
	NamespaceRuntime = "runtime"
)
