// Package provision is the Docker provisioner behind `talosctl cluster create|destroy|show`: it
// builds node images from the static talosbox binary, and creates, inspects, stops, starts and
// destroys clusters of node containers on one bridge network.
//
// It talks to the Docker Engine only through the Engine API (github.com/moby/moby/client), never
// through the docker CLI, and it never pulls: images are built locally with [Docker.BuildImage],
// because the machines it runs on may have no registry access at all.
//
// Every object it creates (network, volumes, containers) carries the label
// talosbox.cluster.name=<cluster>, and that label is the only source of truth: [Docker.Show],
// [Docker.List] and [Docker.Destroy] reconstruct a cluster from labels and inspection, so a
// cluster created by one process can be shown or destroyed by another, and a crashed create can
// always be cleaned up with [Docker.Destroy].
//
// Typical use by a CLI:
//
//	d, err := provision.New(ctx, provision.Options{})
//	if err != nil { ... }             // errors.Is(err, provision.ErrEngineUnreachable)
//	defer d.Close()
//	err = d.BuildImage(ctx, provision.BuildRequest{Tag: "talosbox:dev", Binary: "_out/talosbox"}, os.Stderr)
//	cluster, err := d.Create(ctx, req, func(e provision.Event) { fmt.Println(e) })
//	...
//	err = d.Destroy(ctx, "talos-default", func(e provision.Event) { fmt.Println(e) })
package provision

// Labels put on every object this package creates. They are exported so that callers (and
// tests) can query Docker with the same filters.
const (
	// LabelCluster names the cluster an object belongs to; Destroy and Show select by it.
	LabelCluster = "talosbox.cluster.name"
	// LabelNodeName names the node a container or state volume belongs to.
	LabelNodeName = "talosbox.node.name"
	// LabelNodeType is "controlplane" or "worker".
	LabelNodeType = "talosbox.node.type"
	// LabelOwned marks objects created by this package, as opposed to objects a user attached.
	LabelOwned = "talosbox.owned"
	// LabelCreateID is unique per Create call: a rollback removes what carries it, which
	// includes objects whose creation reply was lost, and never another call's objects.
	LabelCreateID = "talosbox.create.id"
)

// Node types, stored in [LabelNodeType].
const (
	TypeControlPlane = "controlplane"
	TypeWorker       = "worker"
)

// StateDir is where each node's named state volume is mounted: the --state-dir of machined.
const StateDir = "/var/lib/talosbox"
