package configs

// KubeInlineManifestConfig is Talos's KubeInlineManifestConfig: a
// manifest the control plane applies, named, an entry of
// cluster.inlineManifests (after the v1alpha1 document's own).
type KubeInlineManifestConfig struct {
	Name     string `yaml:"name"`
	Manifest string `yaml:"manifest"`
}

// Kind implements Document.
func (*KubeInlineManifestConfig) Kind() string { return "KubeInlineManifestConfig" }

// DocumentName implements NamedDocument.
func (k *KubeInlineManifestConfig) DocumentName() string { return k.Name }

// check: the manifest is checked where it is folded; a name the v1alpha1
// document also uses is a duplicate there.
func (k *KubeInlineManifestConfig) check(v *validator, path string) {
	v.objectName(path+".name", "manifest", k.Name)
}

func (k *KubeInlineManifestConfig) fold(f *folding) {
	c := f.cluster()
	i := len(c.InlineManifests)
	c.InlineManifests = append(c.InlineManifests, InlineManifest{Name: k.Name, Contents: k.Manifest})
	f.alias(indexPath("cluster.inlineManifests", i), "")
	f.alias(indexPath("cluster.inlineManifests", i)+".contents", "manifest")
}
