package configs

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// Redacted stands in for each secret in EncodeRedacted's output, as Talos
// prints a redacted config.
const Redacted = "******"

// secretPaths hold key material and credentials: Talos's list (trustd
// token, OS/Kubernetes/aggregator/etcd CA keys, service account key,
// cluster secret, bootstrap token, aescbc and secretbox keys) and the
// other credentials a config can carry. "*" matches any one element, a
// map key or a list index.
var secretPaths = []string{
	"machine.token",
	"machine.ca.key",
	"machine.registries.config.*.auth.password",
	"machine.registries.config.*.auth.auth",
	"machine.registries.config.*.auth.identityToken",
	"machine.registries.config.*.tls.clientIdentity.key",
	"machine.systemDiskEncryption.*.keys.*.static.passphrase",
	"machine.network.interfaces.*.wireguard.privateKey",
	"machine.network.interfaces.*.vip.*.apiToken",
	"machine.network.interfaces.*.vlans.*.vip.*.apiToken",
	"cluster.secret",
	"cluster.token",
	"cluster.aescbcEncryptionSecret",
	"cluster.secretboxEncryptionSecret",
	"cluster.ca.key",
	"cluster.aggregatorCA.key",
	"cluster.serviceAccount.key",
	"cluster.etcd.ca.key",
}

var secretPatterns = sync.OnceValue(func() [][]string {
	out := make([][]string, len(secretPaths))
	for i, p := range secretPaths {
		out[i] = strings.Split(p, ".")
	}

	return out
})

// EncodeRedacted is Encode with every secret replaced by Redacted, for
// clients that may read the config but not its secrets (os:reader). The
// structure stays: a reader sees which secrets are set, and everything
// else as it is. Secrets left empty stay empty.
//
// It encodes what was written (the v1alpha1 document and each typed
// document) from the parsed config, never from the applied text, whose
// comments could hold anything.
func (c *Config) EncodeRedacted() ([]byte, error) {
	if err := c.checkUnchanged(); err != nil {
		return nil, err
	}

	var out []byte

	if v1 := c.V1Alpha1(); v1 != nil {
		n, err := canonical(v1)
		if err != nil {
			return nil, fmt.Errorf("encode redacted config: %w", err)
		}

		redact(n, nil)

		if out, err = encodeIndented(n); err != nil {
			return nil, err
		}
	}

	for _, doc := range c.Documents {
		n, err := documentNode(doc)
		if err != nil {
			return nil, fmt.Errorf("encode redacted config: %w", err)
		}

		redactTagged(n, reflect.TypeOf(doc))

		b, err := encodeIndented(n)
		if err != nil {
			return nil, err
		}

		if len(out) > 0 {
			out = append(out, "---\n"...)
		}

		out = append(out, b...)
	}

	return out, nil
}

// redactTagged replaces the values of the fields tagged `secret:"true"`
// in n, which encodes a value of type t: a typed document's secrets are
// marked on its type, where a new field cannot be forgotten by a list
// kept elsewhere.
func redactTagged(n *yaml.Node, t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}

	switch {
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct:
		fi := fieldsOf(t)

		for i := 0; i+1 < len(n.Content); i += 2 {
			idx, ok := fi.index[n.Content[i].Value]
			if !ok {
				continue
			}

			f := t.Field(idx)
			if f.Tag.Get("secret") == "true" {
				redactAll(n.Content[i+1])

				continue
			}

			// secret:"keys:NAME": a free-form value whose secrets are the
			// values of its keys named NAME, at any depth (an
			// EncryptionConfiguration's key secrets).
			if name, ok := strings.CutPrefix(f.Tag.Get("secret"), "keys:"); ok {
				redactKeyed(n.Content[i+1], name)

				continue
			}

			redactTagged(n.Content[i+1], f.Type)
		}
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Map:
		for i := 1; i < len(n.Content); i += 2 {
			redactTagged(n.Content[i], t.Elem())
		}
	case n.Kind == yaml.SequenceNode && t.Kind() == reflect.Slice:
		for _, c := range n.Content {
			redactTagged(c, t.Elem())
		}
	}
}

// redactKeyed replaces the values of the mapping keys named name under n.
func redactKeyed(n *yaml.Node, name string) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == name {
				redactAll(n.Content[i+1])
			} else {
				redactKeyed(n.Content[i+1], name)
			}
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			redactKeyed(c, name)
		}
	}
}

// redactAll replaces every non-empty scalar under n.
func redactAll(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode {
		if n.Value != "" {
			n.Value, n.Tag, n.Style = Redacted, "!!str", yaml.DoubleQuotedStyle
		}

		return
	}

	for _, c := range n.Content {
		redactAll(c)
	}
}

// redact walks n, which sits at path, replacing the secrets under it.
func redact(n *yaml.Node, path []string) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			redact(n.Content[i+1], append(path, n.Content[i].Value))
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			redact(c, append(path, "*"))
		}
	case yaml.ScalarNode:
		if n.Value != "" && isSecret(path) {
			n.Value, n.Tag, n.Style = Redacted, "!!str", yaml.DoubleQuotedStyle
		}
	}
}

func isSecret(path []string) bool {
	for _, p := range secretPatterns() {
		if len(p) == len(path) && matchElements(p, path) {
			return true
		}
	}

	return false
}

func matchElements(pattern, path []string) bool {
	for i, e := range pattern {
		if e != "*" && e != path[i] {
			return false
		}
	}

	return true
}
