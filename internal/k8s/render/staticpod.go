package render

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/resources/k8s"
)

var componentUIDs = map[string]int{k8s.APIServerID: constants.APIServerUID, k8s.ControllerManagerID: constants.ControllerManagerUID, k8s.SchedulerID: constants.SchedulerUID}

// PodVersions are the annotations that make the kubelet restart a pod
// whenever what it reads changes.
type PodVersions struct {
	// Secrets is the version of the files under SecretsDir.
	Secrets string
	// Config is the version of the component's config resource.
	Config string
	// ConfigFile is FilesVersion of ConfigFiles (the apiserver's only).
	ConfigFile string
}

// StaticPodFor renders one control-plane component's pod.
func StaticPodFor(id string, spec k8s.ComponentConfigSpec, v PodVersions) (map[string]any, error) {
	var (
		args  []string
		err   error
		probe map[string]any
	)

	switch id {
	case k8s.APIServerID:
		args, err = apiServerArgs(spec)
	case k8s.ControllerManagerID:
		args, err = controllerManagerArgs(spec)
		probe = httpsProbe(10257, "/healthz")
	case k8s.SchedulerID:
		args, err = schedulerArgs(spec)
		probe = httpsProbe(10259, "/livez")
	default:
		return nil, fmt.Errorf("static pod %q: unknown component", id)
	}

	if err != nil {
		return nil, err
	}

	uid := componentUIDs[id]

	annotations := map[string]any{
		"talos.dev/config-version":    v.Config,
		"talos.dev/secrets-version":   v.Secrets,
		constants.ShimGroupAnnotation: constants.SystemShimGroup,
	}
	if id == k8s.APIServerID {
		annotations["talos.dev/config-file-version"] = v.ConfigFile
	}

	mounts := []any{
		map[string]any{"name": "secrets", "mountPath": path.Join(constants.SecretsDir, id), "readOnly": true},
	}
	vols := []any{
		hostPathVolume("secrets", path.Join(constants.SecretsDir, id)),
	}

	if id != k8s.ControllerManagerID {
		mounts = append(mounts, map[string]any{"name": "config", "mountPath": path.Join(constants.ConfigDir, id), "readOnly": true})
		vols = append(vols, hostPathVolume("config", path.Join(constants.ConfigDir, id)))
	}

	if id == k8s.APIServerID {
		mounts = append(mounts, map[string]any{"name": "audit", "mountPath": constants.AuditDir, "readOnly": false})
		vols = append(vols, hostPathVolume("audit", constants.AuditDir))
	}

	for _, ev := range spec.ExtraVolumes {
		mounts = append(mounts, map[string]any{"name": ev.Name, "mountPath": ev.MountPath, "readOnly": ev.ReadOnly})
		vols = append(vols, hostPathVolume(ev.Name, ev.HostPath))
	}

	caps := map[string]any{"drop": []any{"ALL"}}
	if id == k8s.APIServerID {
		caps["add"] = []any{"NET_BIND_SERVICE"}
	}

	container := map[string]any{
		"name":    id,
		"image":   spec.Image,
		"command": append([]any{"/usr/local/bin/" + id}, toAny(args)...),
		"env":     env(spec),
		"resources": map[string]any{
			"requests": stringMap(spec.Resources.Requests),
		},
		"volumeMounts": mounts,
		"securityContext": map[string]any{
			"allowPrivilegeEscalation": false,
			"capabilities":             caps,
			"seccompProfile":           map[string]any{"type": "RuntimeDefault"},
		},
	}

	if len(spec.Resources.Limits) > 0 {
		container["resources"].(map[string]any)["limits"] = stringMap(spec.Resources.Limits) //nolint:forcetypeassert // built above
	}

	if id == k8s.APIServerID && spec.StartupProbesEnabled {
		apiServerProbes(container, spec.LocalPort)
	}

	if probe != nil {
		// Talos gives the startup probe 12 tries of 5 s with the default
		// 1 s timeout. An emulated node (QEMU under TCG, no KVM) that is
		// also pulling images needs longer than a minute to bring the
		// controller-manager up and can take over a second to finish a TLS
		// handshake, so the kubelet killed it every 60 s, forever. Here
		// the startup probe gets the liveness probe's 15 s timeout and
		// two minutes; a started component is probed as Talos probes it.
		startup := maps.Clone(probe)
		startup["periodSeconds"] = 5
		startup["failureThreshold"] = 24
		startup["timeoutSeconds"] = 15

		liveness := maps.Clone(probe)
		liveness["timeoutSeconds"] = 15

		container["startupProbe"] = startup
		container["livenessProbe"] = liveness
	}

	version := spec.Image[strings.LastIndex(spec.Image, ":")+1:]

	return map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata": map[string]any{
			"name":        id,
			"namespace":   "kube-system",
			"annotations": annotations,
			"labels": map[string]any{
				"tier":                         "control-plane",
				"k8s-app":                      id,
				"component":                    id,
				"app.kubernetes.io/name":       id,
				"app.kubernetes.io/version":    strings.TrimPrefix(version, "v"),
				"app.kubernetes.io/component":  "control-plane",
				"app.kubernetes.io/managed-by": "Talos",
			},
		},
		"spec": map[string]any{
			"priority":          2000000000,
			"priorityClassName": "system-cluster-critical",
			"hostNetwork":       true,
			"containers":        []any{container},
			"securityContext": map[string]any{
				"runAsNonRoot": true,
				"runAsUser":    uid,
				"runAsGroup":   uid,
			},
			"volumes": vols,
		},
	}, nil
}

func hostPathVolume(name, p string) map[string]any {
	return map[string]any{"name": name, "hostPath": map[string]any{"path": p}}
}

func httpsProbe(port int, p string) map[string]any {
	return map[string]any{"httpGet": map[string]any{"host": "127.0.0.1", "path": p, "port": port, "scheme": "HTTPS"}}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}

	return out
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}

	return out
}

// env is POD_IP, then the user's variables sorted by key with $ escaped
// (the kubelet would expand $(VAR) references), as Talos renders it.
func env(spec k8s.ComponentConfigSpec) []any {
	out := []any{map[string]any{"name": "POD_IP", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "status.podIP"}}}}

	for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
		out = append(out, map[string]any{"name": k, "value": strings.ReplaceAll(spec.Env[k], "$", "$$")})
	}

	return out
}

func secret(id, file string) string { return path.Join(constants.SecretsDir, id, file) }

func apiServerArgs(spec k8s.ComponentConfigSpec) ([]string, error) {
	s := func(f string) string { return secret(k8s.APIServerID, f) }
	c := func(f string) string { return path.Join(constants.ConfigDir, k8s.APIServerID, f) }

	a := argSet{
		"admission-control-config-file":      c("admission-control-config.yaml"),
		"allow-privileged":                   "true",
		"anonymous-auth":                     "false",
		"api-audiences":                      spec.ControlPlaneEndpoint,
		"audit-log-maxage":                   "30",
		"audit-log-maxbackup":                "10",
		"audit-log-maxsize":                  "100",
		"audit-log-path":                     path.Join(constants.AuditDir, "kube-apiserver.log"),
		"audit-policy-file":                  c("auditpolicy.yaml"),
		"authorization-config":               c("authorization-config.yaml"),
		"bind-address":                       "0.0.0.0",
		"client-ca-file":                     s("ca.crt"),
		"enable-admission-plugins":           "NodeRestriction",
		"enable-bootstrap-token-auth":        "true",
		"encryption-provider-config":         s("encryptionconfig.yaml"),
		"etcd-cafile":                        s("etcd-client-ca.crt"),
		"etcd-certfile":                      s("etcd-client.crt"),
		"etcd-keyfile":                       s("etcd-client.key"),
		"etcd-servers":                       strings.Join(spec.EtcdServers, ","),
		"kubelet-client-certificate":         s("apiserver-kubelet-client.crt"),
		"kubelet-client-key":                 s("apiserver-kubelet-client.key"),
		"kubelet-preferred-address-types":    "InternalIP,ExternalIP,Hostname",
		"profiling":                          "false",
		"proxy-client-cert-file":             s("front-proxy-client.crt"),
		"proxy-client-key-file":              s("front-proxy-client.key"),
		"requestheader-allowed-names":        "front-proxy-client",
		"requestheader-client-ca-file":       s("aggregator-ca.crt"),
		"requestheader-extra-headers-prefix": "X-Remote-Extra-",
		"requestheader-group-headers":        "X-Remote-Group",
		"requestheader-username-headers":     "X-Remote-User",
		"secure-port":                        strconv.Itoa(spec.LocalPort),
		"service-account-issuer":             spec.ControlPlaneEndpoint,
		"service-account-key-file":           s("service-account.pub"),
		"service-account-signing-key-file":   s("service-account.key"),
		"service-cluster-ip-range":           strings.Join(spec.ServiceCIDRs, ","),
		"tls-cert-file":                      s("apiserver.crt"),
		"tls-cipher-suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256," +
			"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305," +
			"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_RSA_WITH_AES_256_GCM_SHA384,TLS_RSA_WITH_AES_128_GCM_SHA256",
		"tls-min-version":      "VersionTLS12",
		"tls-private-key-file": s("apiserver.key"),
	}

	if spec.AdvertisedAddress != "" {
		a["advertise-address"] = spec.AdvertisedAddress
	}

	// Talos 1.14's API server (a KubeAuthenticationConfig) authenticates
	// with the structured config, anonymous access included.
	if spec.UseAuthenticationConfig {
		delete(a, "anonymous-auth")
		a["authentication-config"] = c("authentication-config.yaml")
	}

	if len(spec.APIAudiences) > 0 {
		a["api-audiences"] = strings.Join(spec.APIAudiences, ",")
	}

	if len(spec.ServiceAccountIssuers) > 0 {
		a["service-account-issuer"] = spec.ServiceAccountIssuers[0]
	}

	// A structured authorization config excludes the flags it replaces.
	for _, k := range []string{"authorization-mode", "authorization-webhook-config-file"} {
		if spec.ExtraArgs.Has(k) {
			delete(a, "authorization-config")
		}
	}

	policies := apiServerPolicies
	if spec.UseAuthenticationConfig {
		// talosbox writes the file the flag names.
		policies = maps.Clone(policies)
		policies["authentication-config"] = argDenied
	}

	args, err := a.merge(spec.ExtraArgs, policies, "cluster.apiServer.extraArgs")
	if err != nil {
		return nil, err
	}

	// The issuers the API server accepts besides its own: the flag is
	// repeated, right after the first.
	if len(spec.ServiceAccountIssuers) > 1 {
		i := slices.IndexFunc(args, func(s string) bool { return strings.HasPrefix(s, "--service-account-issuer=") })
		extra := make([]string, 0, len(spec.ServiceAccountIssuers)-1)

		for _, iss := range spec.ServiceAccountIssuers[1:] {
			extra = append(extra, "--service-account-issuer="+iss)
		}

		args = slices.Insert(args, i+1, extra...)
	}

	return args, nil
}

// apiServerProbes are Talos's API server probes (kubeadm's): /livez to
// start and to live, /readyz to take traffic, over HTTPS on the local
// port.
func apiServerProbes(container map[string]any, port int) {
	probe := func(path string, initialDelay, period, failures int) map[string]any {
		return map[string]any{
			"httpGet":             map[string]any{"host": "localhost", "path": path, "port": port, "scheme": "HTTPS"},
			"initialDelaySeconds": initialDelay,
			"periodSeconds":       period,
			"timeoutSeconds":      15,
			"failureThreshold":    failures,
		}
	}

	container["startupProbe"] = probe("/livez", 10, 10, 24)
	container["readinessProbe"] = probe("/readyz", 0, 1, 3)
	container["livenessProbe"] = probe("/livez", 10, 10, 8)
}

func controllerManagerArgs(spec k8s.ComponentConfigSpec) ([]string, error) {
	s := func(f string) string { return secret(k8s.ControllerManagerID, f) }

	a := argSet{
		"allocate-node-cidrs":              "true",
		"authentication-kubeconfig":        s("kubeconfig"),
		"authorization-kubeconfig":         s("kubeconfig"),
		"bind-address":                     "127.0.0.1",
		"cluster-cidr":                     strings.Join(spec.PodCIDRs, ","),
		"cluster-signing-cert-file":        s("ca.crt"),
		"cluster-signing-key-file":         s("ca.key"),
		"configure-cloud-routes":           "false",
		"controllers":                      "*,tokencleaner",
		"kubeconfig":                       s("kubeconfig"),
		"leader-elect":                     "true",
		"profiling":                        "false",
		"root-ca-file":                     s("root-ca.crt"),
		"service-account-private-key-file": s("service-account.key"),
		"service-cluster-ip-range":         strings.Join(spec.ServiceCIDRs, ","),
		"tls-min-version":                  "VersionTLS13",
	}

	args, err := a.merge(spec.ExtraArgs, controllerManagerPolicies, "cluster.controllerManager.extraArgs")
	if err != nil {
		return nil, err
	}

	// The bare flag goes first, as Talos places it.
	return append([]string{"--use-service-account-credentials"}, args...), nil
}

func schedulerArgs(spec k8s.ComponentConfigSpec) ([]string, error) {
	s := func(f string) string { return secret(k8s.SchedulerID, f) }

	a := argSet{
		"authentication-kubeconfig":              s("kubeconfig"),
		"authentication-tolerate-lookup-failure": "false",
		"authorization-kubeconfig":               s("kubeconfig"),
		"bind-address":                           "127.0.0.1",
		"config":                                 path.Join(constants.ConfigDir, k8s.SchedulerID, "scheduler-config.yaml"),
		"leader-elect":                           "true",
		"profiling":                              "false",
		"tls-min-version":                        "VersionTLS13",
	}

	return a.merge(spec.ExtraArgs, schedulerPolicies, "cluster.scheduler.extraArgs")
}
