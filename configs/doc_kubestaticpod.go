package configs

// KubeStaticPodConfig is Talos's KubeStaticPodConfig: a pod the kubelet
// runs as a static pod, named; an entry of machine.pods (after the
// v1alpha1 document's own). The pod's own metadata.name names it in
// Kubernetes; the document's name only tells the documents apart.
type KubeStaticPodConfig struct {
	Name string       `yaml:"name"`
	Pod  Unstructured `yaml:"pod" merge:"replace"`
}

// Kind implements Document.
func (*KubeStaticPodConfig) Kind() string { return "KubeStaticPodConfig" }

// DocumentName implements NamedDocument.
func (k *KubeStaticPodConfig) DocumentName() string { return k.Name }

// check: the pod is checked where it is folded.
func (k *KubeStaticPodConfig) check(v *validator, path string) {
	v.objectName(path+".name", "static pod", k.Name)

	if len(k.Pod) == 0 {
		v.errorf(path+".pod", "static pod spec is required (apiVersion: v1, kind: Pod, metadata, spec)")
	}
}

func (k *KubeStaticPodConfig) fold(f *folding) {
	if len(k.Pod) == 0 {
		return
	}

	m := f.machine()
	i := len(m.Pods)
	m.Pods = append(m.Pods, cloneUnstructured(k.Pod))
	f.alias(indexPath("machine.pods", i), "pod")
}
