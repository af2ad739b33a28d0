package machine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/cri"
	"github.com/talosbox/talosbox/internal/kmod"
	"github.com/talosbox/talosbox/internal/meta"
	"github.com/talosbox/talosbox/internal/platform"
	"github.com/talosbox/talosbox/internal/resources/runtime"
	"github.com/talosbox/talosbox/internal/sequencer"
	"github.com/talosbox/talosbox/internal/version"
)

func task(name string, fn sequencer.TaskFunc) sequencer.Task {
	return sequencer.Task{Name: name, Func: fn}
}

// initializeSequence prepares the machine and finds the config, storing
// it in *cfg.
func (n *Node) initializeSequence(cfg *loadedConfig) *sequencer.Sequence {
	metal := n.opts.Platform.IsMetal()
	seq := &sequencer.Sequence{Name: "initialize"}

	seq.AppendWhen(metal, "mountPseudo", task("mountPseudoFilesystems", func(_ context.Context, w io.Writer) error {
		return platform.MountPseudo(w)
	}))
	// Disks and NICs appear once their drivers load: before STATE is
	// looked for and before networkd starts.
	seq.AppendWhen(metal, "modules", task("loadBootModules", func(_ context.Context, w io.Writer) error {
		return platform.LoadBootModules("", w)
	}))
	seq.AppendWhen(metal, "cmdline", task("applyKernelCmdline", n.applyCmdline))
	// Before STATE, whose encryption config Talos keeps in META.
	seq.AppendWhen(metal || n.opts.MetaPath != "", "meta", task("loadMeta", n.volumes.LoadMeta))
	// Before the identity: it lives on STATE.
	seq.AppendWhen(metal, "state", task("mountStatePartition", n.volumes.MountState))
	seq.Append("identity", task("loadNodeIdentity", func(ctx context.Context, w io.Writer) error {
		if err := n.state.RemoveStaleTemps(); err != nil {
			return err
		}

		id, err := n.state.Identity()
		if err == nil {
			fmt.Fprintf(w, "[talos] node identity %s…\n", id[:8])
		}

		// A config that failed an earlier boot stays on record.
		n.publishBootRecord(ctx, false)

		return err
	}))
	// After the identity: networkd (in machined) derives the default
	// hostname from it.
	seq.Append("earlyServices", task("startMachined", n.startEarlyServices))
	seq.Append("config", task("loadConfig", func(ctx context.Context, w io.Writer) error {
		loaded, err := n.acquire(ctx, w)
		*cfg = loaded

		return err
	}))

	return seq
}

func (n *Node) applyCmdline(_ context.Context, w io.Writer) error {
	c, err := platform.ReadCmdline()
	if err != nil {
		return err
	}

	if h, ok := c.Get(platform.ParamHostname); ok && h != "" {
		if err := unix.Sethostname([]byte(h)); err != nil {
			return fmt.Errorf("set hostname %q: %w", h, err)
		}

		fmt.Fprintf(w, "[talos] hostname %s (from the kernel command line)\n", h)
	}

	n.cmdline = c

	// Like $USERDATA in container mode, talos.config= only seeds a node
	// with nothing persisted: an apply-config survives the reboot.
	if src, ok := c.Get(platform.ParamConfig); ok && src != "" {
		n.cmdlineConfig = src
	}

	if _, unknown := c.FatalAction(); unknown != "" {
		fmt.Fprintf(w, "[talos] %s=%s is not %s, %s or %s: a fatal error will wait\n", platform.ParamFatal, unknown, platform.FatalWait, platform.FatalPowerOff, platform.FatalReboot)
	}

	return n.readEmbeddedConfig(w)
}

// bootSequence sets the machine up from the config and starts the services.
func (n *Node) bootSequence(loaded loadedConfig) *sequencer.Sequence {
	cfg, data := loaded.cfg, loaded.data
	metal := n.opts.Platform.IsMetal()
	seq := &sequencer.Sequence{Name: "boot"}

	// On metal the config goes to the disk: STATE is made on the first
	// boot with a config, and EPHEMERAL (/var) is mounted before anything
	// writes there.
	seq.AppendWhen(metal, "install", task("installSystemDisk", n.volumes.InstallSystemDisk(cfg)))
	// The install wrote META: found only now on a node installed by this boot.
	seq.AppendWhen(metal && !n.volumes.HasMeta(), "meta", task("loadMeta", n.volumes.LoadMeta))
	seq.AppendWhen(metal, "ephemeral", task("mountEphemeralPartition", n.volumes.MountEphemeral(cfg)))
	seq.AppendWhen(metal && cfg.Machine != nil && len(cfg.Machine.Disks) > 0, "userDisks", task("mountUserDisks", n.volumes.MountUserDisks(cfg)))
	seq.AppendWhen(metal && len(configs.DocumentsOf[*configs.UserVolumeConfig](cfg)) > 0, "userVolumes", task("mountUserVolumes", n.volumes.MountUserVolumes(cfg)))
	seq.Append("config", task("saveConfig", func(ctx context.Context, w io.Writer) error {
		if cfg.Persist {
			persisted, err := n.state.LoadConfig()
			if err != nil {
				return err
			}

			if !bytes.Equal(persisted, data) {
				if err := n.state.SaveConfig(data); err != nil {
					return err
				}

				fmt.Fprintf(w, "[talos] persisted config to %s\n", n.state.ConfigPath())
			}
		} else {
			fmt.Fprintln(w, "[talos] persist is false: the config is kept in memory only")
		}

		n.mu.Lock()
		n.booted = true
		n.staged = false // what STATE held is what now runs
		n.mu.Unlock()

		return n.publish(ctx, loaded)
	}))
	// An upgrade staged before the reboot is installed now, before any
	// service uses the disk, and the node reboots into it.
	seq.AppendWhen(metal && n.volumes.HasMeta(), "stagedUpgrade", task("applyStagedUpgrade", n.applyStagedUpgrade(cfg)))
	seq.AppendWhen(version.BrokenBoot != "", "broken", task("failOnPurpose", func(context.Context, io.Writer) error {
		return errors.New("this build fails every boot on purpose (built with BROKEN_BOOT=1, to test rollbacks)")
	}))
	seq.Append("env", task("setUserEnvVars", func(context.Context, io.Writer) error {
		env := map[string]string{}
		if cfg.Machine != nil {
			maps.Copy(env, cfg.Machine.Env)
		}

		// The CA bundle goes where machine.files go; the processes
		// started from now on (containerd) inherit where to read it.
		root := "/"
		if !metal {
			root = n.opts.Platform.EphemeralDir
		}

		certDirs, err := cri.WriteTrustedRoots(cfg, root)
		if err != nil {
			return err
		}

		if _, set := env["SSL_CERT_DIR"]; certDirs != "" && !set {
			env["SSL_CERT_DIR"] = certDirs
		}

		return n.setEnv(env)
	}))
	seq.Append("userSetup", task("writeUserFiles", func(_ context.Context, w io.Writer) error {
		return n.writeUserFiles(loaded, w)
	}))
	seq.AppendWhen(metal, "kernel",
		task("setSysctls", func(_ context.Context, w io.Writer) error {
			var user map[string]string
			if cfg.Machine != nil {
				user = cfg.Machine.Sysctls
			}

			return applyKernelDefaults(user, "/proc/sys", w)
		}),
		task("loadKernelModules", func(context.Context, io.Writer) error {
			if cfg.Machine == nil || cfg.Machine.Kernel == nil {
				return nil
			}

			return kmod.Load(cfg.Machine.Kernel.Modules, kmod.Options{})
		}),
	)
	// runc needs the cgroup hierarchies writable; a Docker node has them
	// read-only in a cgroup namespace of its own.
	seq.AppendWhen(!metal && !n.opts.NoContainerd, "cgroups", task("mountCgroups", func(_ context.Context, w io.Writer) error {
		return platform.MountCgroupsWritable(w)
	}))
	// The kubelet's mounts propagate to and from its container (pods'
	// volumes, the CRI's mounts), which needs a shared root, as Talos
	// makes it; a Docker node starts with a private one. On metal only
	// the kubelet's directory is made shared (MakeSharedMount says why).
	seq.AppendWhen(!metal && n.opts.Platform.OwnRoot, "sharedRoot", task("makeRootShared", func(context.Context, io.Writer) error {
		return platform.MakeRootShared()
	}))
	seq.AppendWhen(metal && !n.opts.NoContainerd, "sharedRoot", task("makeKubeletShared", func(context.Context, io.Writer) error {
		return platform.MakeSharedMount("/var/lib/kubelet")
	}))
	seq.Append("startEverything", task("startAllServices", func(ctx context.Context, w io.Writer) error {
		return n.startServices(ctx, cfg, w)
	}))
	seq.Append("running", task("markRunning", func(ctx context.Context, w io.Writer) error {
		// Before the stage says running: whoever sees it may rely on it.
		n.bootedGood(ctx, loaded, w)
		n.setStage(ctx, runtime.StageRunning)

		if metal {
			n.dropUpgradeFallback(ctx, w)
		}

		return nil
	}))

	return seq
}

// stopSequence stops every service, in reverse dependency order.
func (n *Node) stopSequence(name string) *sequencer.Sequence {
	return n.appendStop(&sequencer.Sequence{Name: name})
}

// upgradeSequence drains the node's Kubernetes, then stops it.
func (n *Node) upgradeSequence() *sequencer.Sequence {
	return n.appendStop(n.appendDrain(&sequencer.Sequence{Name: "upgrade"}))
}

// appendDrain cordons and drains the node's Kubernetes (Options.Drain);
// a drain that fails is reported and what follows goes on, as in Talos.
func (n *Node) appendDrain(seq *sequencer.Sequence) *sequencer.Sequence {
	seq.AppendWhen(n.opts.Drain != nil, "drain", task("cordonAndDrainNode", func(ctx context.Context, w io.Writer) error {
		if err := n.opts.Drain(ctx, w); err != nil {
			fmt.Fprintf(w, "[talos] drain: %v; going on\n", err)
		}

		return nil
	}))

	return seq
}

func (n *Node) appendStop(seq *sequencer.Sequence) *sequencer.Sequence {
	seq.Append("stopEverything", task("stopAllServices", n.stopServices))
	seq.AppendWhen(n.ownsRuntime(), "releaseRuntime", task("stopAllPods", n.releaseRuntime))
	seq.AppendWhen(n.opts.Platform.IsMetal(), "unmountSystem", task("unmountSystemVolumes", n.volumes.UnmountSystem))

	return seq
}

func (n *Node) stopServices(ctx context.Context, _ io.Writer) error {
	n.mu.Lock()
	sup := n.sup
	n.cancelTryLocked()
	n.mu.Unlock()

	if sup == nil {
		return nil
	}

	return sup.StopAll(ctx)
}

// resetSequence leaves the cluster, stops everything and wipes STATE and
// EPHEMERAL (or the labels asked for).
func (n *Node) resetSequence(opts ResetOptions) *sequencer.Sequence {
	metal := n.opts.Platform.IsMetal()
	seq := &sequencer.Sequence{Name: "reset"}

	if opts.Graceful {
		n.appendDrain(seq)
	}

	seq.AppendWhen(opts.Graceful, "leave", task("leaveEtcd", func(ctx context.Context, w io.Writer) error {
		if n.opts.LeaveCluster == nil {
			fmt.Fprintln(w, "[talos] etcd does not run on this node: nothing to leave")
			return nil
		}

		return n.opts.LeaveCluster(ctx, w)
	}))
	seq.Append("stopEverything", task("stopAllServices", n.stopServices))
	seq.AppendWhen(n.ownsRuntime(), "releaseRuntime", task("stopAllPods", n.releaseRuntime))
	seq.Append("wipe", task("wipeSystemLabels", func(ctx context.Context, w io.Writer) error {
		labels := opts.SystemLabelsToWipe
		if len(labels) == 0 {
			labels = []string{"STATE", "EPHEMERAL"}
		}

		for _, l := range labels {
			dir := n.state.Dir
			if l == "EPHEMERAL" {
				dir = n.opts.Platform.EphemeralDir
			}

			if metal {
				if err := n.volumes.WipeVolume(ctx, l, dir, w); err != nil {
					return err
				}

				continue
			}

			if err := n.volumes.WipeDirLabel(l, w); err != nil {
				return err
			}
		}

		// STATE's encryption record goes with STATE, as in Talos: the
		// next config says afresh whether it is encrypted.
		if slices.Contains(labels, "STATE") && metal && n.volumes.HasMeta() {
			if _, err := n.MetaDelete(ctx, meta.StateEncryptionConfig); err != nil {
				fmt.Fprintf(w, "[talos] META: delete the STATE encryption config: %v\n", err)
			}
		}

		if slices.Contains(labels, "STATE") {
			n.mu.Lock()
			n.staged = false
			n.opts.ConfigPath, n.opts.PlatformConfig = "", nil // the next boot starts from scratch
			n.mu.Unlock()

			if err := n.forgetConfig(ctx); err != nil {
				return err
			}
		}

		return nil
	}))
	seq.AppendWhen(metal, "unmountSystem", task("unmountSystemVolumes", n.volumes.UnmountSystem))

	return seq
}
