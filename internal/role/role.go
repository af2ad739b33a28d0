// Package role names the Talos API roles a client certificate carries and
// the operations on role lists that apid's authorization and the node's
// handlers share.
package role

import (
	"slices"
	"strings"
)

// Role is one Talos API role, carried as an organization of the client
// certificate's subject.
type Role string

// Roles, as Talos names them.
const (
	Admin      Role = "os:admin"
	Operator   Role = "os:operator"
	Reader     Role = "os:reader"
	EtcdBackup Role = "os:etcd:backup"
	// MetaWriter may write and delete META keys and nothing else (the
	// Talos dashboard's role).
	MetaWriter Role = "os:meta:writer"
	// Impersonator is apid's own, for forwarding calls to other nodes: a
	// peer holding it is authorized with the roles it forwards.
	Impersonator Role = "os:impersonator"
)

// Known are the roles a certificate may carry; others are ignored.
var Known = []Role{Admin, Operator, Reader, EtcdBackup, MetaWriter, Impersonator}

// Has says whether roles holds r.
func Has(roles []Role, r Role) bool { return slices.Contains(roles, r) }

// Without is roles less r, in a new slice.
func Without(roles []Role, r Role) []Role {
	out := roles[:0:0]

	for _, x := range roles {
		if x != r {
			out = append(out, x)
		}
	}

	return out
}

// Strings are the roles as certificate organizations.
func Strings(roles []Role) []string {
	out := make([]string, len(roles))
	for i, r := range roles {
		out[i] = string(r)
	}

	return out
}

// Format is the roles as error messages show them.
func Format(roles []Role) string {
	if len(roles) == 0 {
		return "no roles"
	}

	return "[" + strings.Join(Strings(roles), " ") + "]"
}
