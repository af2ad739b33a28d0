package configs

import (
	"fmt"
	"strings"
)

// KubeEtcdEncryptionConfig is Talos's KubeEtcdEncryptionConfig: the API
// server's EncryptionConfiguration (its resources list), whole. v1alpha1
// only has the secretbox and aescbc secrets the node builds one from;
// with the document the node writes the document's
// (encryptionconfig.yaml, with its apiVersion and kind). Its key secrets
// are redacted.
type KubeEtcdEncryptionConfig struct {
	Config Unstructured `yaml:"config" secret:"keys:secret"`
}

// Kind implements Document.
func (*KubeEtcdEncryptionConfig) Kind() string { return "KubeEtcdEncryptionConfig" }

// The providers of an EncryptionConfiguration, and the key sizes of the
// ciphers (kube-apiserver refuses others).
var encryptionKeySizes = map[string][]int{
	"aescbc":    {16, 24, 32},
	"aesgcm":    {16, 24, 32},
	"secretbox": {32},
}

func (k *KubeEtcdEncryptionConfig) check(v *validator, path string) {
	v.controlPlaneOnly(path, k.Kind())

	p := path + ".config"

	if len(k.Config) == 0 {
		v.errorf(p, "etcd encryption config is required: the EncryptionConfiguration's resources (see the KubeEtcdEncryptionConfig gen config writes)")

		return
	}

	for _, key := range sortedKeys(k.Config) {
		if key != "resources" && key != "apiVersion" && key != "kind" {
			v.errorf(p+"."+key, "unknown field %q in the EncryptionConfiguration: kube-apiserver refuses it (it has resources)", key)
		}
	}

	resources, ok := k.Config["resources"].([]any)
	if !ok || len(resources) == 0 {
		v.errorf(p+".resources", "resources must list what is encrypted and how (resources: [{resources: [secrets], providers: [...]}])")

		return
	}

	// kube-apiserver refuses a resource listed twice.
	seen := map[string]string{}

	for i, r := range resources {
		rp := indexPath(p+".resources", i)

		rm, ok := r.(map[string]any)
		if !ok {
			v.errorf(rp, "must be a mapping with resources and providers, got %v", r)

			continue
		}

		names, ok := rm["resources"].([]any)
		if !ok || len(names) == 0 {
			v.errorf(rp+".resources", "resources must list the resources encrypted (secrets, configmaps.*, ...)")
		}

		for j, n := range names {
			np := indexPath(rp+".resources", j)
			name, _ := n.(string)

			if first, dup := seen[name]; dup {
				v.errorf(np, "resource %q is already listed at %s: kube-apiserver refuses it twice (a strategic merge patch adds to the list; replace the config with a JSON patch)", name, first)
			}

			seen[name] = np
		}

		providers, ok := rm["providers"].([]any)
		if !ok || len(providers) == 0 {
			v.errorf(rp+".providers", "providers must list at least one provider (secretbox, aescbc, aesgcm, kms or identity)")

			continue
		}

		for j, pr := range providers {
			v.encryptionProvider(indexPath(rp+".providers", j), pr)
		}
	}
}

func (v *validator) encryptionProvider(p string, pr any) {
	pm, ok := pr.(map[string]any)
	if !ok || len(pm) != 1 {
		v.errorf(p, "a provider is a mapping with exactly one of secretbox, aescbc, aesgcm, kms or identity")

		return
	}

	for name, body := range pm {
		switch {
		case name == "identity":
		case name == "kms":
			v.warnf(p+".kms", "the kms provider talks to a KMS plugin over a socket the kube-apiserver pod must have mounted: talosbox mounts none")
		case encryptionKeySizes[name] != nil:
			v.encryptionKeys(p+"."+name, name, body)
		default:
			v.errorf(p+"."+name, "unknown provider %q: want secretbox, aescbc, aesgcm, kms or identity", name)
		}
	}
}

func (v *validator) encryptionKeys(p, cipher string, body any) {
	bm, _ := body.(map[string]any)
	keys, ok := bm["keys"].([]any)

	if !ok || len(keys) == 0 {
		v.errorf(p+".keys", "%s needs keys: [{name: key1, secret: <base64 of %s bytes>}]", cipher, sizesText(encryptionKeySizes[cipher]))

		return
	}

	names := map[string]bool{}

	for i, key := range keys {
		kp := indexPath(p+".keys", i)
		km, _ := key.(map[string]any)
		name, _ := km["name"].(string)
		secret, _ := km["secret"].(string)

		switch {
		case name == "":
			v.errorf(kp+".name", "a key needs a name")
		case names[name]:
			v.errorf(kp+".name", "key name %q is used twice", name)
		}

		names[name] = true

		if err := checkBase64Key(cipher+" key "+name, secret, encryptionKeySizes[cipher]...); err != nil {
			// The secret itself is never quoted.
			v.errorf(kp+".secret", "%v", err)
		}
	}
}

func sizesText(sizes []int) string {
	s := make([]string, len(sizes))
	for i, n := range sizes {
		s[i] = fmt.Sprint(n)
	}

	return strings.Join(s, ", ")
}

// fold: nothing in v1alpha1 holds it; setting the v1alpha1 secrets as
// well is a conflict (Talos refuses it).
func (k *KubeEtcdEncryptionConfig) fold(f *folding) {
	w := f.writtenCluster()

	if w.SecretboxEncryptionSecret != "" || w.AESCBCEncryptionSecret != "" {
		field := "cluster.secretboxEncryptionSecret"
		if w.SecretboxEncryptionSecret == "" {
			field = "cluster.aescbcEncryptionSecret"
		}

		f.conflict("", field, "the etcd encryption config")
	}
}

// EncryptionConfiguration is the API server's EncryptionConfiguration
// from the config's KubeEtcdEncryptionConfig (nil without one): the
// document's, with Talos's apiVersion and kind.
func EncryptionConfiguration(c *Config) map[string]any {
	k := DocumentOf[*KubeEtcdEncryptionConfig](c)
	if k == nil {
		return nil
	}

	out := map[string]any(cloneUnstructured(k.Config))
	out["apiVersion"] = "apiserver.config.k8s.io/v1"
	out["kind"] = "EncryptionConfiguration"

	return out
}
