package config

// The namespace, as Talos names it.
const (
	NamespaceConfig = "config"
)
