package kubernetes

import (
	"fmt"
	"strconv"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kubeconfig is a parsed kubeconfig, client-go's own form, so a merged
// file keeps every field kubectl knows (extensions included).
type Kubeconfig = clientcmdapi.Config

// ParseKubeconfig reads a kubeconfig; what names it in the error.
func ParseKubeconfig(data []byte, what string) (*Kubeconfig, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("%s: not a kubeconfig: %w", what, err)
	}

	return cfg, nil
}

// MarshalKubeconfig is cfg as YAML.
func MarshalKubeconfig(cfg *Kubeconfig) ([]byte, error) {
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}

	return data, nil
}

// RenameCurrentContext gives the current context a new name
// (kubeconfig's --force-context-name).
func RenameCurrentContext(cfg *Kubeconfig, name string) {
	if ctx, ok := cfg.Contexts[cfg.CurrentContext]; ok {
		delete(cfg.Contexts, cfg.CurrentContext)
		cfg.Contexts[name] = ctx
	}

	cfg.CurrentContext = name
}

// MergeKubeconfig adds add's clusters, users and contexts to cur and makes
// add's current context cur's. A name cur already has is replaced with
// force, else the new entry takes the first free numbered name (name-1,
// name-2, ...) and its context follows it. renamed maps the contexts' old
// names to new.
func MergeKubeconfig(cur, add *Kubeconfig, force bool) (renamed map[string]string) {
	renamed = map[string]string{}

	if cur.Clusters == nil {
		cur.Clusters = map[string]*clientcmdapi.Cluster{}
	}

	if cur.AuthInfos == nil {
		cur.AuthInfos = map[string]*clientcmdapi.AuthInfo{}
	}

	if cur.Contexts == nil {
		cur.Contexts = map[string]*clientcmdapi.Context{}
	}

	clusterNames := map[string]string{}
	for name, c := range add.Clusters {
		clusterNames[name] = place(cur.Clusters, name, c, force)
	}

	userNames := map[string]string{}
	for name, u := range add.AuthInfos {
		userNames[name] = place(cur.AuthInfos, name, u, force)
	}

	for name, c := range add.Contexts {
		c = c.DeepCopy()

		if n, ok := clusterNames[c.Cluster]; ok {
			c.Cluster = n
		}

		if n, ok := userNames[c.AuthInfo]; ok {
			c.AuthInfo = n
		}

		placed := place(cur.Contexts, name, c, force)
		if placed != name {
			renamed[name] = placed
		}

		if name == add.CurrentContext {
			cur.CurrentContext = placed
		}
	}

	return renamed
}

// place puts v into m under name, or under the first free numbered name
// when name is taken and force is not given; it returns the name used.
func place[V any](m map[string]V, name string, v V, force bool) string {
	if _, taken := m[name]; !taken || force {
		m[name] = v
		return name
	}

	for n := 1; ; n++ {
		numbered := name + "-" + strconv.Itoa(n)
		if _, taken := m[numbered]; !taken {
			m[numbered] = v
			return numbered
		}
	}
}
