package validation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/containerd/containerd/v2/core/remotes/docker/config"
	"github.com/containerd/log"
	"github.com/pelletier/go-toml/v2"
	"github.com/sirupsen/logrus"
)

// HostsFile is one file of a registry hosts tree (the CRI's config_path).
type HostsFile struct {
	// Path is slash-separated and relative to the tree: <registry>/hosts.toml,
	// <registry>/ca.crt.
	Path string
	// Name is the file as the user wrote it, for messages.
	Name string
	Data []byte
}

// Hosts parses every hosts.toml of files with containerd's own parser
// (core/remotes/docker/config, what the CRI runs at each pull), the
// other files beside them as the node lays them out, so that a CA or
// client certificate named by a path relative to the registry directory
// is read too. A hosts.toml containerd cannot parse is not an error to
// containerd: it logs it and pulls as if the file were not there, from
// the registry itself. Here it is refused. userRoot is where the user
// places the tree (/etc/cri/conf.d/hosts): an absolute path under it
// inside a hosts.toml names nothing on the node, where the tree is
// containerd's config_path instead.
//
// The parser reads from a directory, so the tree is written to a private
// temporary directory for the check and removed after it.
func Hosts(files []HostsFile, userRoot string) error {
	var tomls []HostsFile

	for _, f := range files {
		if path.Base(f.Path) != "hosts.toml" {
			continue
		}

		if strings.Count(f.Path, "/") != 1 {
			return fmt.Errorf("%s: containerd reads only <registry>/hosts.toml in its hosts tree (%s/<registry>/hosts.toml)", f.Name, userRoot)
		}

		tomls = append(tomls, f)
	}

	if len(tomls) == 0 {
		return nil
	}

	tmp, err := os.MkdirTemp("", "talosbox-hosts-")
	if err != nil {
		return fmt.Errorf("check registry hosts files: %w", err)
	}
	defer os.RemoveAll(tmp)

	for _, f := range files {
		p := filepath.Join(tmp, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return fmt.Errorf("check registry hosts files: %w", err)
		}

		if err := os.WriteFile(p, f.Data, 0o600); err != nil {
			return fmt.Errorf("check registry hosts files: %w", err)
		}
	}

	for _, f := range tomls {
		if err := parseHosts(tmp, f, userRoot); err != nil {
			return err
		}
	}

	return nil
}

func parseHosts(tmp string, f HostsFile, userRoot string) error {
	dir := path.Dir(f.Path)
	hook := &errorHook{}

	l := logrus.New()
	l.Out = io.Discard
	l.AddHook(hook)

	ctx := log.WithLogger(context.Background(), logrus.NewEntry(l))
	local := filepath.Join(tmp, filepath.FromSlash(dir))

	_, err := config.ConfigureHosts(ctx, config.HostOptions{
		HostDir: func(string) (string, error) { return local, nil },
	})(registryHost(dir))

	if perr := hook.first(); perr != nil {
		return fmt.Errorf("%s: containerd cannot parse it and would pull as if it were not there: %w", f.Name, perr)
	}

	// The TLS files a hosts.toml names are read as the hosts are made: an
	// error about a file of this tree is the config's; one about a file
	// elsewhere on the node cannot be told here.
	if err != nil && strings.Contains(err.Error(), tmp) {
		return fmt.Errorf("%s: %s", f.Name, strings.ReplaceAll(err.Error(), local, path.Join(userRoot, dir)))
	}

	for _, p := range tlsPaths(f.Data) {
		if p == userRoot || strings.HasPrefix(p, userRoot+"/") {
			return fmt.Errorf("%s: %s is not where the node keeps the hosts tree: name the file relative to the registry directory (%q)", f.Name, p, strings.TrimPrefix(strings.TrimPrefix(p, path.Join(userRoot, dir)), "/"))
		}
	}

	return nil
}

// registryHost is the host a hosts directory is for (host_port_ is
// host:port), which only sets containerd's defaults.
func registryHost(dir string) string {
	if h, ok := strings.CutSuffix(dir, "_"); ok {
		if i := strings.LastIndex(h, "_"); i > 0 {
			return h[:i] + ":" + h[i+1:]
		}
	}

	return dir
}

// tlsPaths are the absolute ca and client paths of a hosts.toml that
// containerd parsed: at the top and in every [host] table.
func tlsPaths(data []byte) []string {
	var doc map[string]any
	if toml.Unmarshal(data, &doc) != nil {
		return nil
	}

	tables := []map[string]any{doc}

	if hosts, ok := doc["host"].(map[string]any); ok {
		for _, h := range hosts {
			if t, ok := h.(map[string]any); ok {
				tables = append(tables, t)
			}
		}
	}

	var out []string

	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			if path.IsAbs(x) {
				out = append(out, path.Clean(x))
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}

	for _, t := range tables {
		walk(t["ca"])
		walk(t["client"])
	}

	slices.Sort(out)

	return out
}

// errorHook keeps the first error containerd logs.
type errorHook struct {
	mu  sync.Mutex
	err error
}

func (*errorHook) Levels() []logrus.Level {
	return []logrus.Level{logrus.PanicLevel, logrus.FatalLevel, logrus.ErrorLevel}
}

func (h *errorHook) Fire(e *logrus.Entry) error {
	h.mu.Lock()
	defer h.mu.Unlock()

	if h.err == nil {
		if err, ok := e.Data[logrus.ErrorKey].(error); ok {
			h.err = err
		} else {
			h.err = errors.New(e.Message)
		}
	}

	return nil
}

func (h *errorHook) first() error {
	h.mu.Lock()
	defer h.mu.Unlock()

	return h.err
}
