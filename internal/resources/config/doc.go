// Package config holds the machine config resources: the config in effect and the machine type it gives, with Talos's type names, namespaces and
// IDs. Producers and consumers both import it.
package config
