package config

const (
	NamespaceConfig = "config"
)
