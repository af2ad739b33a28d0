package network

import "github.com/talosbox/talosbox/internal/bus"

// ApplyIssueType is the type's name, as Talos has it.
const ApplyIssueType = "ApplyIssues.net.talos.dev"

// Issue states.
const (
	// IssuePending: waiting for something outside networkd (a link to
	// appear, an operator to be wired in).
	IssuePending = "pending"
	// IssueError: the kernel refused, or the specs contradict each other.
	IssueError = "error"
)

// ApplyIssueSpec is one thing networkd could not apply. Its ID is
// "<kind>/<spec id>", e.g. "address/eth0/10.0.0.2/24".
type ApplyIssueSpec struct {
	State   string `yaml:"state" json:"state"`
	Message string `yaml:"message" json:"message"`
}

// ApplyIssue is an ApplyIssues resource.
type ApplyIssue = bus.Typed[ApplyIssueSpec]
