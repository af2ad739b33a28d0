package configs

import "strings"

// KubeAuthenticationConfig is Talos's KubeAuthenticationConfig: the API
// server's structured authentication configuration (an
// AuthenticationConfiguration without its apiVersion and kind: anonymous
// access, JWT issuers). v1alpha1 has no field for it: the node writes it
// as the API server's authentication-config.yaml and points
// --authentication-config at it, in place of --anonymous-auth=false.
type KubeAuthenticationConfig struct {
	Configuration Unstructured `yaml:"configuration" merge:"replace"`
}

// Kind implements Document.
func (*KubeAuthenticationConfig) Kind() string { return "KubeAuthenticationConfig" }

// authenticationFields are an AuthenticationConfiguration's fields.
var authenticationFields = []string{"apiVersion", "kind", "anonymous", "jwt"}

// check: the API server refuses a configuration with a field it does not
// know, or of the wrong type, and would not start.
func (k *KubeAuthenticationConfig) check(v *validator, path string) {
	v.controlPlaneOnly(path, k.Kind())

	p := path + ".configuration"
	v.knownKeys(p, k.Configuration, authenticationFields)

	// kube-apiserver refuses the flags the file replaces next to it.
	// (A KubeAPIServerConfig refuses them itself.)
	if c := v.cfg.Cluster; c != nil && c.APIServer != nil && DocumentOf[*KubeAPIServerConfig](v.cfg) == nil {
		for _, arg := range c.APIServer.ExtraArgs.Names() {
			if arg == "anonymous-auth" || arg == "authentication-config" || strings.HasPrefix(arg, "oidc-") {
				v.errorf(keyPath("cluster.apiServer.extraArgs", arg), "kube-apiserver extra argument %q cannot be used with a KubeAuthenticationConfig: "+
					"say it in the KubeAuthenticationConfig", arg)
			}
		}
	}

	if a, ok := k.Configuration["anonymous"]; ok {
		am, ok := a.(map[string]any)
		if !ok {
			v.errorf(p+".anonymous", "anonymous must be a mapping (enabled, conditions), got %v", a)
		} else {
			v.knownKeys(p+".anonymous", am, []string{"enabled", "conditions"})

			if e, ok := am["enabled"]; ok {
				if _, ok := e.(bool); !ok {
					v.errorf(p+".anonymous.enabled", "enabled must be true or false, got %v", e)
				}
			}

			conds, _ := am["conditions"].([]any)
			for i, c := range conds {
				cm, _ := c.(map[string]any)
				if cp, _ := cm["path"].(string); cp == "" {
					v.errorf(indexPath(p+".anonymous.conditions", i), "a condition is a path anonymous requests may reach (path: /livez)")
				}
			}
		}
	}

	if j, ok := k.Configuration["jwt"]; ok {
		list, ok := j.([]any)
		if !ok {
			v.errorf(p+".jwt", "jwt must be a list of JWT authenticators, got %v", j)

			return
		}

		for i, a := range list {
			am, _ := a.(map[string]any)
			issuer, _ := am["issuer"].(map[string]any)

			if u, _ := issuer["url"].(string); u == "" {
				v.errorf(indexPath(p+".jwt", i)+".issuer.url", "a JWT authenticator needs issuer.url (https)")
			} else {
				v.check(indexPath(p+".jwt", i)+".issuer.url", checkURL("issuer URL", u, "https"))
			}

			if _, ok := am["claimMappings"]; !ok {
				v.errorf(indexPath(p+".jwt", i)+".claimMappings", "a JWT authenticator needs claimMappings (at least username)")
			}
		}
	}
}

// fold: nothing in v1alpha1 holds it.
func (k *KubeAuthenticationConfig) fold(*folding) {}

// AuthenticationConfiguration is the API server's structured
// authentication configuration from the config's KubeAuthenticationConfig
// (nil without one), with Talos's apiVersion and kind.
func AuthenticationConfiguration(c *Config) map[string]any {
	k := DocumentOf[*KubeAuthenticationConfig](c)
	if k == nil {
		return nil
	}

	out := map[string]any(cloneUnstructured(k.Configuration))
	if out == nil {
		out = map[string]any{}
	}

	out["apiVersion"] = "apiserver.config.k8s.io/v1beta1"
	out["kind"] = "AuthenticationConfiguration"

	return out
}

// AnonymousHealthChecks reports whether the API server lets anonymous
// requests reach /livez and /readyz through the config's
// KubeAuthenticationConfig (anonymous enabled, with no conditions or
// conditions naming both): what its probes need.
func AnonymousHealthChecks(c *Config) bool {
	k := DocumentOf[*KubeAuthenticationConfig](c)
	if k == nil {
		return false
	}

	a, _ := k.Configuration["anonymous"].(map[string]any)
	if on, _ := a["enabled"].(bool); !on {
		return false
	}

	conds, ok := a["conditions"].([]any)
	if !ok || len(conds) == 0 {
		return true
	}

	paths := map[string]bool{}

	for _, c := range conds {
		m, _ := c.(map[string]any)
		if p, ok := m["path"].(string); ok {
			paths[p] = true
		}
	}

	return paths["/livez"] && paths["/readyz"]
}
