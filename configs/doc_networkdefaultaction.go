package configs

import "strings"

// NetworkDefaultActionConfig is Talos's NetworkDefaultActionConfig: what
// the node's ingress firewall does with traffic no NetworkRuleConfig
// matches, accept (the default) or block. networkd reads it from the
// document (v1alpha1 has no firewall).
type NetworkDefaultActionConfig struct {
	Ingress string `yaml:"ingress"`
}

// The ingress default actions (Talos's nethelpers.DefaultAction).
const (
	DefaultActionAccept = "accept"
	DefaultActionBlock  = "block"
)

// Kind implements Document.
func (*NetworkDefaultActionConfig) Kind() string { return "NetworkDefaultActionConfig" }

// Block reports whether unmatched ingress traffic is blocked.
func (d *NetworkDefaultActionConfig) Block() bool {
	return d != nil && strings.EqualFold(d.Ingress, DefaultActionBlock)
}

func (d *NetworkDefaultActionConfig) check(v *validator, path string) {
	switch strings.ToLower(d.Ingress) {
	case DefaultActionAccept, DefaultActionBlock:
	case "":
		v.errorf(path+".ingress", "ingress must be specified: accept or block")
	default:
		v.errorf(path+".ingress", "invalid ingress default action %q: want accept or block", d.Ingress)
	}
}

// fold: nothing; see the type.
func (*NetworkDefaultActionConfig) fold(*folding) {}
