// Package registry serves an OCI image layout read-only over the OCI
// distribution API (the protocol of `docker pull`, containerd and crane):
// /v2/, manifests and blobs by GET and HEAD with ranges, tags/list and
// _catalog. It serves the layout in place, with no copy into a registry's
// own storage, and checks every blob against its digest before the first
// byte of it leaves, so a corrupt cache is refused rather than served.
//
// Images are named in the layout by full reference. A client may ask for
// a repository by its path alone (docker pull HOST/kube-apiserver:TAG), by
// the full name (HOST/registry.k8s.io/kube-apiserver:TAG), or as a mirror
// does, with the upstream registry in the ns query parameter (containerd).
package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/talosbox/talosbox/internal/imagestore"
)

// repo is one repository of the layout: its images by tag, and every blob
// they use.
type repo struct {
	registry, path string // "registry.k8s.io", "kube-apiserver"
	tags           map[string]imagestore.Image
	blobs          map[v1.Hash]bool
	manifests      map[v1.Hash]imagestore.Image
}

// Server is the read-only registry over one layout.
type Server struct {
	store *imagestore.Store
	repos []*repo
	log   *log.Logger

	mu       sync.Mutex
	verified map[v1.Hash]fileID // blobs whose content was checked, as they were then
}

// fileID identifies a file's content as stat sees it: a blob checked once
// is not hashed again until it is replaced or written to.
type fileID struct {
	ino, size, mtime int64
}

// New opens the layout in dir. Every image must have its manifest, config
// and layers present; a missing blob is an error that names it.
func New(dir string, logger *log.Logger) (*Server, error) {
	st, err := imagestore.Open(dir)
	if err != nil {
		return nil, err
	}

	if len(st.Images) == 0 {
		return nil, fmt.Errorf("%s: the image cache holds no images", dir)
	}

	if logger == nil {
		logger = log.New(io.Discard, "", 0)
	}

	s := &Server{store: st, log: logger, verified: map[v1.Hash]fileID{}}
	byName := map[string]*repo{}

	for _, im := range st.Images {
		ref, err := name.ParseReference(im.Ref, name.WeakValidation)
		if err != nil {
			return nil, fmt.Errorf("%s: image %q: %w", dir, im.Ref, err)
		}

		r := byName[ref.Context().Name()]
		if r == nil {
			r = &repo{
				registry: ref.Context().RegistryStr(), path: ref.Context().RepositoryStr(),
				tags: map[string]imagestore.Image{}, blobs: map[v1.Hash]bool{}, manifests: map[v1.Hash]imagestore.Image{},
			}
			byName[ref.Context().Name()] = r
			s.repos = append(s.repos, r)
		}

		if t, ok := ref.(name.Tag); ok {
			r.tags[t.TagStr()] = im
		}

		r.manifests[im.Descriptor.Digest] = im

		hs, err := st.Blobs(im)
		if err != nil {
			return nil, err
		}

		for _, h := range hs {
			if _, err := os.Stat(st.BlobPath(h)); err != nil {
				return nil, fmt.Errorf("%s: image %s: blob %s is missing: %w", dir, im.Ref, h, err)
			}

			r.blobs[h] = true
		}
	}

	return s, nil
}

// Images lists the references the server holds.
func (s *Server) Images() []string {
	var out []string
	for _, im := range s.store.Images {
		out = append(out, im.Ref)
	}

	return out
}

var (
	manifestPath = regexp.MustCompile(`^/v2/(.+)/manifests/([^/]+)$`)
	blobPath     = regexp.MustCompile(`^/v2/(.+)/blobs/([^/]+)$`)
	tagsPath     = regexp.MustCompile(`^/v2/(.+)/tags/list$`)
)

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")

	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.fail(w, r, http.StatusMethodNotAllowed, "UNSUPPORTED", "this registry is a read-only image cache: "+r.Method+" is not supported")
		return
	}

	p := r.URL.Path

	switch {
	case p == "/v2" || p == "/v2/":
		writeJSON(w, r, map[string]string{})
	case p == "/v2/_catalog":
		s.catalog(w, r)
	case tagsPath.MatchString(p):
		m := tagsPath.FindStringSubmatch(p)
		if rp := s.resolve(w, r, m[1]); rp != nil {
			writeJSON(w, r, map[string]any{"name": m[1], "tags": slices.Sorted(keys(rp.tags))})
		}
	case manifestPath.MatchString(p):
		m := manifestPath.FindStringSubmatch(p)
		if rp := s.resolve(w, r, m[1]); rp != nil {
			s.manifest(w, r, rp, m[2])
		}
	case blobPath.MatchString(p):
		m := blobPath.FindStringSubmatch(p)
		if rp := s.resolve(w, r, m[1]); rp != nil {
			s.blob(w, r, rp, m[2])
		}
	default:
		s.fail(w, r, http.StatusNotFound, "NOT_FOUND", "no such endpoint: "+p)
	}
}

// resolve finds the repository a request names, or answers NAME_UNKNOWN.
func (s *Server) resolve(w http.ResponseWriter, r *http.Request, repoName string) *repo {
	var candidates []*repo

	if ns := r.URL.Query().Get("ns"); ns != "" {
		reg := normalizeRegistry(ns)
		for _, rp := range s.repos {
			if rp.registry == reg && (rp.path == repoName || rp.path == "library/"+repoName) {
				candidates = append(candidates, rp)
			}
		}
	} else {
		for _, rp := range s.repos {
			if rp.registry+"/"+rp.path == repoName || rp.path == repoName {
				candidates = append(candidates, rp)
			}
		}
	}

	switch len(candidates) {
	case 1:
		return candidates[0]
	case 0:
		s.fail(w, r, http.StatusNotFound, "NAME_UNKNOWN", fmt.Sprintf("repository %s is not in the image cache", repoName))
	default:
		var names []string
		for _, c := range candidates {
			names = append(names, c.registry+"/"+c.path)
		}

		s.fail(w, r, http.StatusNotFound, "NAME_UNKNOWN", fmt.Sprintf("repository %s is ambiguous (%s): name it in full", repoName, strings.Join(names, ", ")))
	}

	return nil
}

// normalizeRegistry maps the names a client may use for Docker Hub to the
// one references parse to.
func normalizeRegistry(ns string) string {
	switch ns {
	case "docker.io", "registry-1.docker.io":
		return name.DefaultRegistry
	}

	return ns
}

func (s *Server) catalog(w http.ResponseWriter, r *http.Request) {
	var names []string
	for _, rp := range s.repos {
		names = append(names, rp.registry+"/"+rp.path)
	}

	slices.Sort(names)
	writeJSON(w, r, map[string]any{"repositories": names})
}

func (s *Server) manifest(w http.ResponseWriter, r *http.Request, rp *repo, reference string) {
	im, ok := rp.tags[reference]
	if !ok {
		if h, err := v1.NewHash(reference); err == nil {
			im, ok = rp.manifests[h]
		}
	}

	if !ok {
		s.fail(w, r, http.StatusNotFound, "MANIFEST_UNKNOWN", fmt.Sprintf("manifest %s:%s is not in the image cache", rp.path, reference))
		return
	}

	s.serveBlob(w, r, im.Descriptor.Digest, string(im.Descriptor.MediaType))
}

func (s *Server) blob(w http.ResponseWriter, r *http.Request, rp *repo, digest string) {
	h, err := v1.NewHash(digest)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "DIGEST_INVALID", fmt.Sprintf("invalid digest %q: %v", digest, err))
		return
	}

	if !rp.blobs[h] {
		s.fail(w, r, http.StatusNotFound, "BLOB_UNKNOWN", fmt.Sprintf("blob %s is not in repository %s", h, rp.path))
		return
	}

	s.serveBlob(w, r, h, "application/octet-stream")
}

// serveBlob sends a blob after checking its content against its digest,
// with ranges, HEAD and conditional requests handled by http.ServeContent.
func (s *Server) serveBlob(w http.ResponseWriter, r *http.Request, h v1.Hash, contentType string) {
	f, err := os.Open(s.store.BlobPath(h))
	if err != nil {
		s.fail(w, r, http.StatusNotFound, "BLOB_UNKNOWN", fmt.Sprintf("blob %s: %v", h, err))
		return
	}
	defer f.Close()

	st, err := f.Stat()
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "UNKNOWN", err.Error())
		return
	}

	if err := s.check(h, f, st); err != nil {
		s.log.Printf("refusing blob %s: %v", h, err)

		var de *imagestore.DigestError
		if errors.As(err, &de) {
			s.fail(w, r, http.StatusInternalServerError, "DIGEST_INVALID", err.Error())
		} else {
			s.fail(w, r, http.StatusInternalServerError, "UNKNOWN", err.Error())
		}

		return
	}

	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Docker-Content-Digest", h.String())
	w.Header().Set("Etag", `"`+h.String()+`"`)
	w.Header().Set("Cache-Control", "max-age=31536000")
	http.ServeContent(w, r, "", st.ModTime(), f)
}

// check verifies the open blob once per version of the file.
func (s *Server) check(h v1.Hash, f *os.File, st os.FileInfo) error {
	id := fileID{size: st.Size(), mtime: st.ModTime().UnixNano()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		id.ino = int64(sys.Ino)
	}

	s.mu.Lock()
	ok := s.verified[h] == id
	s.mu.Unlock()

	if ok {
		return nil
	}

	if err := imagestore.VerifyReader(f, h); err != nil {
		return err
	}

	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}

	s.mu.Lock()
	s.verified[h] = id
	s.mu.Unlock()

	return nil
}

// fail answers with the distribution API's error body.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	s.log.Printf("%s %s: %d %s: %s", r.Method, r.URL.RequestURI(), status, code, msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)

	if r.Method != http.MethodHead {
		_ = json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]string{{"code": code, "message": msg}}})
	}
}

func writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	data, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(data)))

	if r.Method != http.MethodHead {
		_, _ = w.Write(data)
	}
}

func keys[M ~map[K]V, K comparable, V any](m M) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
