package configs

import "net/url"

// KmsgLogConfig is Talos's KmsgLogConfig: the node streams its kernel log
// (/dev/kmsg) to a remote endpoint, one JSON object a line over TCP or
// one a datagram over UDP, as Talos's kmsg log delivery does. v1alpha1
// has nothing for it (Talos's talos.logging.kernel= kernel argument is
// the other way to ask): the node's kmsg controller reads the documents.
type KmsgLogConfig struct {
	Name string `yaml:"name"`
	// URL is tcp://host:port/ or udp://host:port/.
	URL string `yaml:"url"`
}

// Kind implements Document.
func (*KmsgLogConfig) Kind() string { return "KmsgLogConfig" }

// DocumentName implements NamedDocument.
func (k *KmsgLogConfig) DocumentName() string { return k.Name }

func (k *KmsgLogConfig) check(v *validator, path string) {
	if k.Name == "" {
		v.errorf(path+".name", "name is required: a name for this destination (remote-log)")
	}

	p := path + ".url"

	if k.URL == "" {
		v.errorf(p, "url is required: where to send the kernel log (tcp://192.168.3.7:3478/ or udp://...)")

		return
	}

	if err := checkURL("kmsg log URL", k.URL, "tcp", "udp"); err != nil {
		v.errorf(p, "%v", err)

		return
	}

	u, _ := url.Parse(k.URL)

	switch {
	case u.Path != "" && u.Path != "/":
		v.errorf(p, "url %q has a path (%s): the path must be empty (tcp://host:port/)", k.URL, u.Path)
	case u.Port() == "":
		v.errorf(p, "url %q has no port: the port is required (tcp://host:port/)", k.URL)
	}
}

// fold: nothing in v1alpha1 says it.
func (*KmsgLogConfig) fold(*folding) {}
