// Package runtime holds the runtime resources: the machine's stage and status, the last config refused, and the META tags, with Talos's type names, namespaces and
// IDs. Producers and consumers both import it.
package runtime
