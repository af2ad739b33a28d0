package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"path"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/resources/k8s"
)

// File is one file the node writes for Kubernetes.
type File struct {
	Path string
	Mode uint32
	UID  int
	Data []byte
}

// ConfigFiles are the files under ConfigDir the apiserver and the
// scheduler read: the admission, audit and authorization configs and the
// scheduler's own configuration, with the config's overrides.
func ConfigFiles(cfg *configs.Config) ([]File, error) {
	var (
		api       *configs.APIServerConfig
		scheduler *configs.SchedulerConfig
	)

	if cfg.Cluster != nil {
		api, scheduler = cfg.Cluster.APIServer, cfg.Cluster.Scheduler
	}

	var plugins []any

	audit := map[string]any{"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": []any{map[string]any{"level": "Metadata"}}}

	if api != nil {
		for _, p := range api.AdmissionControl {
			plugins = append(plugins, map[string]any{"name": p.Name, "configuration": map[string]any(p.Configuration)})
		}

		if len(api.AuditPolicy) > 0 {
			audit = map[string]any(api.AuditPolicy)
		}
	}

	admission := map[string]any{"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AdmissionConfiguration", "plugins": plugins}
	if plugins == nil {
		admission["plugins"] = []any{}
	}

	// Node then RBAC, unless KubeAuthorizerConfig documents say otherwise.
	var authorizers []any

	for _, a := range configs.Authorizers(cfg) {
		m := map[string]any{"type": a.Type, "name": a.Name}
		if len(a.Webhook) > 0 {
			m["webhook"] = a.Webhook
		}

		authorizers = append(authorizers, m)
	}

	authz := map[string]any{
		"apiVersion":  "apiserver.config.k8s.io/v1beta1",
		"kind":        "AuthorizationConfiguration",
		"authorizers": authorizers,
	}

	sched := map[string]any{
		"apiVersion":       "kubescheduler.config.k8s.io/v1",
		"kind":             "KubeSchedulerConfiguration",
		"clientConnection": map[string]any{"kubeconfig": secret(k8s.SchedulerID, "kubeconfig")},
	}

	if scheduler != nil && len(scheduler.Config) > 0 {
		user := maps.Clone(map[string]any(scheduler.Config))
		// The kubeconfig is the node's; everything else is the user's.
		cc, _ := user["clientConnection"].(map[string]any)
		cc = maps.Clone(cc)

		if cc == nil {
			cc = map[string]any{}
		}

		cc["kubeconfig"] = secret(k8s.SchedulerID, "kubeconfig")
		user["clientConnection"] = cc
		user["apiVersion"], user["kind"] = sched["apiVersion"], sched["kind"]
		sched = user
	}

	var out []File

	type file struct {
		id, name string
		uid      int
		doc      map[string]any
	}

	files := []file{
		{k8s.APIServerID, "admission-control-config.yaml", constants.APIServerUID, admission},
		{k8s.APIServerID, "auditpolicy.yaml", constants.APIServerUID, audit},
		{k8s.APIServerID, "authorization-config.yaml", constants.APIServerUID, authz},
		{k8s.SchedulerID, "scheduler-config.yaml", constants.SchedulerUID, sched},
	}

	// The structured authentication config (KubeAuthenticationConfig),
	// which --authentication-config names.
	if authn := configs.AuthenticationConfiguration(cfg); authn != nil {
		files = append(files, file{k8s.APIServerID, "authentication-config.yaml", constants.APIServerUID, authn})
	}

	for _, f := range files {
		data, err := yaml.Marshal(f.doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}

		out = append(out, File{Path: path.Join(constants.ConfigDir, f.id, f.name), Mode: 0o400, UID: f.uid, Data: data})
	}

	return out, nil
}

// FilesVersion is a short digest of a set of files: the same content gives
// the same version, so a pod restarts only when what it reads changed.
func FilesVersion(files []File) string {
	h := sha256.New()

	for _, f := range slices.SortedFunc(slices.Values(files), func(a, b File) int {
		switch {
		case a.Path < b.Path:
			return -1
		case a.Path > b.Path:
			return 1
		}

		return 0
	}) {
		fmt.Fprintf(h, "%s %o %d %d\n", f.Path, f.Mode, f.UID, len(f.Data))
		h.Write(f.Data)
	}

	return hex.EncodeToString(h.Sum(nil))[:12]
}
