package installer

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/talosbox/talosbox/configs"
)

// Pull resolves ref through the machine's registry mirrors, the way the
// node's containerd resolves images (machine.registries: a host's own
// mirrors, then "*"'s, then the registry itself unless skipFallback), and
// returns the image of the first endpoint that has it. Layers are read
// lazily, when the image is unpacked.
func Pull(ctx context.Context, ref string, reg *configs.RegistriesConfig, log io.Writer) (v1.Image, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("installer image %q: %w", ref, err)
	}

	host := r.Context().RegistryStr()

	var endpoints []string

	fallback := true

	if reg != nil {
		for _, key := range []string{host, "*"} {
			m, ok := reg.Mirrors[key]
			if !ok {
				continue
			}

			endpoints = append(endpoints, m.Endpoints...)
			fallback = fallback && !m.SkipFallback

			break // a host's own mirrors replace "*"'s, as in containerd's hosts tree
		}
	}

	if fallback {
		endpoints = append(endpoints, "https://"+host)
	}

	var errs []error

	for _, ep := range endpoints {
		img, err := pullFrom(ctx, r, ep, reg)
		if err == nil {
			fmt.Fprintf(log, "[talos] pulled %s from %s\n", ref, ep)
			return img, nil
		}

		if ctx.Err() != nil {
			return nil, fmt.Errorf("pull %s: %w", ref, ctx.Err())
		}

		errs = append(errs, fmt.Errorf("%s: %w", ep, err))
	}

	return nil, fmt.Errorf("pull %s: %w", ref, errors.Join(errs...))
}

func pullFrom(ctx context.Context, r name.Reference, endpoint string, reg *configs.RegistriesConfig) (v1.Image, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("not a registry endpoint URL")
	}

	if p := strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v2"); p != "" {
		return nil, fmt.Errorf("an endpoint with a path (%s) is not supported for installer images", u.Path)
	}

	var opts []name.Option
	if u.Scheme == "http" {
		opts = append(opts, name.Insecure)
	}

	mirror, err := name.NewRegistry(u.Host, opts...)
	if err != nil {
		return nil, err
	}

	repo := r.Context().RepositoryStr()

	var at name.Reference
	if d, ok := r.(name.Digest); ok {
		at, err = name.NewDigest(mirror.Repo(repo).String()+"@"+d.DigestStr(), opts...)
	} else {
		at, err = name.NewTag(mirror.Repo(repo).String()+":"+r.Identifier(), opts...)
	}

	if err != nil {
		return nil, err
	}

	tr := http.DefaultTransport.(*http.Transport).Clone() //nolint:forcetypeassert // the standard library's
	auth := authn.Anonymous

	if reg != nil {
		if c, ok := reg.Config[u.Host]; ok {
			if c.TLS != nil {
				tc := &tls.Config{InsecureSkipVerify: c.TLS.InsecureSkipVerify} //nolint:gosec // the user's choice, per registry
				if len(c.TLS.CA) > 0 {
					pool := x509.NewCertPool()
					pool.AppendCertsFromPEM(c.TLS.CA)
					tc.RootCAs = pool
				}

				tr.TLSClientConfig = tc
			}

			if c.Auth != nil {
				auth = authn.FromConfig(authn.AuthConfig{Username: c.Auth.Username, Password: c.Auth.Password,
					Auth: c.Auth.Auth, IdentityToken: c.Auth.IdentityToken})
			}
		}
	}

	return remote.Image(at, remote.WithContext(ctx), remote.WithTransport(tr), remote.WithAuth(auth),
		remote.WithPlatform(v1.Platform{OS: "linux", Architecture: "amd64"}))
}
