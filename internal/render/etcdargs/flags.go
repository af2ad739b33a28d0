// Package etcdargs is the embedded etcd member's configuration as etcd's
// command line, from the config alone: cluster.etcd.extraArgs read by
// configs.ParseEtcdArg (the rule internal/etcd applies them by), the
// rules etcd's embed.Config.Validate and its listeners then enforce on
// them, and the member's addresses as internal/etcd.SelectAddresses picks
// them. talosctl cannot link etcd; the tests hold this package to
// internal/etcd and to etcd itself.
package etcdargs

import (
	"github.com/talosbox/talosbox/configs"
)

// Flag reads one cluster.etcd.extraArgs entry as the member applies it
// and returns it as the flag it amounts to ("--snapshot-count=10000"; a
// 3.5 name under its 3.6 one, a 3.5 gate as --feature-gates).
func Flag(key, value string) (string, error) {
	arg, err := configs.ParseEtcdArg(key, value)
	if err != nil {
		return "", err
	}

	return arg.CommandLine(value), nil
}
