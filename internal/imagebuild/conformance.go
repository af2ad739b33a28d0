package imagebuild

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/talosbox/talosbox/internal/images"
)

// The images the upstream [Conformance] specs run, by the names and tags
// k8s.io/kubernetes/test/utils/image/manifest.go gives them for the
// default Kubernetes version. Each is rebuilt from source here: the Go
// programs from their upstream modules, the rest from Debian's packages
// (upstream bases them on Alpine, Debian jessie or Docker Hub's httpd and
// nginx, whose builds download at build time; this machine has only
// Debian's archive and Go's module proxy). The README lists where a
// rebuild differs from upstream and why.
const (
	e2eRegistry = "registry.k8s.io/e2e-test-images/"

	AgnhostTag         = "2.56"
	BusyboxTag         = "1.37.0-1"
	HttpdTag           = "2.4.38-4"
	HttpdNewTag        = "2.4.39-4"
	JessieDnsutilsTag  = "1.7"
	NautilusTag        = "1.7"
	NginxTag           = "1.14-4"
	NonewprivsTag      = "1.3"
	SampleAPIServerTag = "1.29.2"
	EtcdTag            = "3.6.4-0"
	E2EPauseTag        = "3.10.1"

	sampleAPIServerModule = "v0.29.2" // k8s.io/sample-apiserver's release of image 1.29.2
	etcdModule            = "v3.6.4"
)

// ConformanceImages are the references make images builds for the
// conformance suite, served to the nodes from the image cache like every
// other image.
func ConformanceImages() []string {
	return []string{
		e2eRegistry + "agnhost:" + AgnhostTag,
		e2eRegistry + "busybox:" + BusyboxTag,
		e2eRegistry + "httpd:" + HttpdTag,
		e2eRegistry + "httpd:" + HttpdNewTag,
		e2eRegistry + "jessie-dnsutils:" + JessieDnsutilsTag,
		e2eRegistry + "nautilus:" + NautilusTag,
		e2eRegistry + "nginx:" + NginxTag,
		e2eRegistry + "nonewprivs:" + NonewprivsTag,
		e2eRegistry + "sample-apiserver:" + SampleAPIServerTag,
		"registry.k8s.io/etcd:" + EtcdTag,
		"registry.k8s.io/pause:" + E2EPauseTag,
	}
}

func e2eRef(repo, tag string) images.Ref {
	name := repo[strings.LastIndexByte(repo, '/')+1:]

	return images.Ref{Component: name, Repository: repo, Tag: tag}
}

// passwd and group are the accounts the images' programs run as: root,
// daemon (httpd's children), www-data, nginx (nginx's workers, uid 101 as
// in Alpine), nobody, and the user and group agnhost's image defines
// for the supplemental-groups specs.
const (
	passwd = `root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
www-data:x:33:33:www-data:/var/www:/usr/sbin/nologin
nginx:x:101:101:nginx:/var/cache/nginx:/sbin/nologin
user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
`
	group = `root:x:0:
daemon:x:1:
www-data:x:33:
nginx:x:101:nginx
user-defined-in-image:x:1000:
group-defined-in-image:x:50000:user-defined-in-image
nogroup:x:65534:
`
)

func baseFiles() []entry {
	return []entry{
		{path: "/etc/passwd", mode: 0o644, data: passwd},
		{path: "/etc/group", mode: 0o644, data: group},
		{path: "/tmp", dir: true, mode: 0o1777},
		{path: "/root", dir: true, mode: 0o700},
	}
}

// debLayer makes one layer of a Debian root's packages, with extra
// entries on top (links maintainer scripts would have made); over an
// image's busybox, the packages' commands take the applets' places.
func (b *builder) debLayer(ctx context.Context, name string, pkgs, applets []string, extra ...entry) (*layer, error) {
	root, _, err := b.debRoot(ctx, name, pkgs)
	if err != nil {
		return nil, err
	}

	es, err := treeEntries(root)
	if err != nil {
		return nil, err
	}

	es = overlay(es, extra)

	return b.makeLayer("debian-"+name, overlay(es, preferPackages(applets, es)))
}

// overlay puts extra over es: an extra entry replaces one at its path.
func overlay(es, extra []entry) []entry {
	over := map[string]bool{}
	for _, e := range extra {
		over[e.path] = true
	}

	out := make([]entry, 0, len(es)+len(extra))

	for _, e := range es {
		if !over[e.path] {
			out = append(out, e)
		}
	}

	return append(out, extra...)
}

// busyboxLayer is busybox built from source with a link for each applet
// in /bin, as Docker's busybox image installs them (the specs run
// /bin/sysctl), and at the paths busybox itself lists, as Alpine's base
// has them for the Alpine-based images. It returns the links' paths.
func (b *builder) busyboxLayer(ctx context.Context) (*layer, []string, error) {
	bin, err := b.busybox(ctx)
	if err != nil {
		return nil, nil, err
	}

	out, err := exec.CommandContext(ctx, bin, "--list-full").Output()
	if err != nil {
		return nil, nil, fmt.Errorf("busybox --list-full: %w", err)
	}

	es := append(baseFiles(), entry{path: "/bin/busybox", src: bin, mode: 0o755})
	links := map[string]bool{}

	for _, p := range strings.Fields(string(out)) {
		for _, l := range []string{"/" + p, "/bin/" + path.Base(p)} {
			if l != "/bin/busybox" && !links[l] {
				links[l] = true
				es = append(es, entry{path: l, link: "/bin/busybox", mode: 0o777})
			}
		}
	}

	l, err := b.makeLayer("busybox", es)

	return l, slices.Sorted(maps.Keys(links)), err
}

// preferPackages links each of busybox's applet paths to the command of
// the same name a Debian package installs, as Alpine's packages replace
// busybox's links: with busybox's /sbin/ip ahead of iproute2's /bin/ip in
// $PATH, the image would run busybox's.
func preferPackages(applets []string, es []entry) []entry {
	provided := map[string]string{} // name -> the package's path, by $PATH order

	for _, dir := range strings.Split(defaultPath, ":") {
		for _, e := range es {
			if path.Dir(e.path) == dir && !e.dir {
				if _, ok := provided[path.Base(e.path)]; !ok {
					provided[path.Base(e.path)] = e.path
				}
			}
		}
	}

	var out []entry

	for _, a := range applets {
		if target, ok := provided[path.Base(a)]; ok && target != a {
			out = append(out, entry{path: a, link: target, mode: 0o777})
		}
	}

	return out
}

// conformanceSpecs builds the conformance images (see ConformanceImages).
func (b *builder) conformanceSpecs(ctx context.Context, pause *layer, corednsBin string) ([]spec, error) {
	kv := "v" + images.Kubernetes

	progs, err := b.build(ctx, program{
		name: "e2e-images", version: kv, kube: true, ldflags: kubeLdflags(kv),
		pkgs: []string{"k8s.io/kubernetes/test/images/agnhost", "k8s.io/kubernetes/test/images/nonewprivs"},
	})
	if err != nil {
		return nil, err
	}

	kube, err := b.download(ctx, "k8s.io/kubernetes", kv)
	if err != nil {
		return nil, err
	}

	testImages := filepath.Join(kube.Dir, "test", "images")

	sample, err := b.build(ctx, program{
		name: "sample-apiserver", version: sampleAPIServerModule, module: "k8s.io/sample-apiserver",
		pkgs: []string{"k8s.io/sample-apiserver"}, wrap: true, ldflags: kubeLdflags(sampleAPIServerModule),
	})
	if err != nil {
		return nil, err
	}

	etcd, err := b.build(ctx, program{
		name: "etcd", version: etcdModule, module: "go.etcd.io/etcd/server/v3",
		pkgs: []string{"go.etcd.io/etcd/server/v3"}, wrap: true,
		ldflags: func(mi moduleInfo) []string {
			return []string{"-X", "go.etcd.io/etcd/api/v3/version.GitSHA=" + short(mi.Commit)}
		},
	})
	if err != nil {
		return nil, err
	}

	busybox, applets, err := b.busyboxLayer(ctx)
	if err != nil {
		return nil, err
	}

	file := func(dst, src string, mode os.FileMode) entry { return entry{path: dst, src: src, mode: mode} }
	link := func(p, target string) entry { return entry{path: p, link: target, mode: 0o777} }

	// agnhost's Alpine packages: bind-tools curl netcat-openbsd iproute2
	// iperf bash, and musl-utils' getent from Alpine's base (libc-bin's
	// here). netcat-openbsd's nc link is an alternative its maintainer
	// script would make.
	agnhostDeb, err := b.debLayer(ctx, "agnhost", []string{"bash", "curl", "netcat-openbsd", "iproute2", "bind9-dnsutils", "iperf", "libc-bin"},
		applets, link("/bin/nc", "nc.openbsd"))
	if err != nil {
		return nil, err
	}

	agnhost, err := b.makeLayer("agnhost", []entry{
		file("/agnhost", filepath.Join(progs, "agnhost"), 0o755),
		link("/agnhost-2", "agnhost"),
		file("/localhost.crt", filepath.Join(testImages, "agnhost", "porter", "localhost.crt"), 0o644),
		file("/localhost.key", filepath.Join(testImages, "agnhost", "porter", "localhost.key"), 0o644),
		file("/coredns", corednsBin, 0o755),
		{path: "/uploads", dir: true, mode: 0o755},
		link("/usr/local/bin/iperf", "/usr/bin/iperf"),
	})
	if err != nil {
		return nil, err
	}

	nautilus, err := b.makeLayer("nautilus", []entry{
		file("/nautilus.jpg", filepath.Join(testImages, "nautilus", "html", "nautilus.jpg"), 0o644),
		file("/data.json", filepath.Join(testImages, "nautilus", "html", "data.json"), 0o644),
	})
	if err != nil {
		return nil, err
	}

	// debian:jessie with dnsutils, as upstream builds it: a Debian root
	// whose /bin/sh is dash, with getent (libc-bin) and dig.
	dnsutils, err := b.debLayer(ctx, "dnsutils", []string{"base-files", "dash", "bash", "coreutils", "grep", "sed", "findutils", "hostname", "libc-bin", "bind9-dnsutils", "bind9-host"},
		nil, append(baseFiles(), file("/coredns", corednsBin, 0o755))...)
	if err != nil {
		return nil, err
	}

	httpdDeb, err := b.debLayer(ctx, "httpd", []string{"apache2-bin", "media-types"}, applets)
	if err != nil {
		return nil, err
	}

	httpd, err := b.makeLayer("httpd", httpdFiles())
	if err != nil {
		return nil, err
	}

	nginxDeb, err := b.debLayer(ctx, "nginx", []string{"nginx"}, applets, nginxFiles()...)
	if err != nil {
		return nil, err
	}

	nnp, err := b.makeLayer("nonewprivs", []entry{file("/usr/local/bin/nnp", filepath.Join(progs, "nonewprivs"), 0o4755)})
	if err != nil {
		return nil, err
	}

	sampleLayer, err := b.makeLayer("sample-apiserver", []entry{file("/sample-apiserver", filepath.Join(sample, "sample-apiserver"), 0o755)})
	if err != nil {
		return nil, err
	}

	etcdLayer, err := b.makeLayer("etcd", []entry{file("/usr/local/bin/etcd", filepath.Join(etcd, "server"), 0o755)})
	if err != nil {
		return nil, err
	}

	httpdCmd := []string{"httpd-foreground"}
	agnhostLayers := []*layer{busybox, agnhostDeb, agnhost}

	return []spec{
		{ref: e2eRef(e2eRegistry+"agnhost", AgnhostTag), version: AgnhostTag, layers: agnhostLayers, entrypoint: []string{"/agnhost"}, cmd: []string{"pause"}},
		{ref: e2eRef(e2eRegistry+"nautilus", NautilusTag), version: NautilusTag, layers: append(agnhostLayers[:3:3], nautilus), entrypoint: []string{"/agnhost"}, cmd: []string{"test-webserver"}},
		{ref: e2eRef(e2eRegistry+"busybox", BusyboxTag), version: BusyboxTag, layers: []*layer{busybox}, cmd: []string{"sh"}},
		{ref: e2eRef(e2eRegistry+"jessie-dnsutils", JessieDnsutilsTag), version: JessieDnsutilsTag, layers: []*layer{dnsutils}, cmd: []string{"bash"}},
		{ref: e2eRef(e2eRegistry+"httpd", HttpdTag), version: HttpdTag, layers: []*layer{busybox, httpdDeb, httpd}, cmd: httpdCmd},
		{ref: e2eRef(e2eRegistry+"httpd", HttpdNewTag), version: HttpdNewTag, layers: []*layer{busybox, httpdDeb, httpd}, cmd: httpdCmd},
		{ref: e2eRef(e2eRegistry+"nginx", NginxTag), version: NginxTag, layers: []*layer{busybox, nginxDeb}, cmd: []string{"nginx", "-g", "daemon off;"}},
		{ref: e2eRef(e2eRegistry+"nonewprivs", NonewprivsTag), version: NonewprivsTag, layers: []*layer{busybox, nnp}, cmd: []string{"nnp"}},
		{ref: e2eRef(e2eRegistry+"sample-apiserver", SampleAPIServerTag), version: SampleAPIServerTag, layers: []*layer{busybox, sampleLayer}, entrypoint: []string{"/sample-apiserver"}},
		{ref: e2eRef("registry.k8s.io/etcd", EtcdTag), version: EtcdTag, layers: []*layer{etcdLayer}, cmd: []string{"/usr/local/bin/etcd"}},
		{ref: e2eRef("registry.k8s.io/pause", E2EPauseTag), version: E2EPauseTag, layers: []*layer{pause}, entrypoint: []string{"/pause"}},
	}, nil
}
