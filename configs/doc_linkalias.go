package configs

import "strings"

// LinkAliasConfig is Talos's LinkAliasConfig: an alias name for the link
// a CEL expression selects. talosbox evaluates no CEL and gives links no
// alias names yet, so the document is refused; it decodes and is checked
// by Talos's rules.
type LinkAliasConfig struct {
	// Name is the alias, or a pattern with a %d suffix (net%d).
	Name     string        `yaml:"name"`
	Selector *LinkSelector `yaml:"selector,omitempty"`
}

// LinkSelector selects links by a CEL expression.
type LinkSelector struct {
	Match string `yaml:"match,omitempty"`
}

// Kind implements Document.
func (*LinkAliasConfig) Kind() string { return "LinkAliasConfig" }

// DocumentName implements NamedDocument.
func (l *LinkAliasConfig) DocumentName() string { return l.Name }

func (l *LinkAliasConfig) check(v *validator, path string) {
	if l.Name == "" {
		v.errorf(path+".name", "name must be specified")
	} else if prefix, suffix, pattern := strings.Cut(l.Name, "%"); pattern && (suffix != "d" || prefix == "") {
		v.errorf(path+".name", "name %q contains an invalid format verb, use %%d suffix", l.Name)
	}

	if l.Selector == nil || l.Selector.Match == "" {
		v.errorf(path+".selector.match", "link selector is required")
	}

	v.errorf(path, "talosbox does not implement LinkAliasConfig yet (link aliases chosen by a CEL selector): "+
		"name the link by its kernel name in the documents that configure it (machine.network.interfaces[].deviceSelector "+
		"selects a link by its hardware address, bus path or driver)")
}

// fold: nothing while the document is refused.
func (*LinkAliasConfig) fold(*folding) {}
