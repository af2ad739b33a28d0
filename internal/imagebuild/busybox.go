package imagebuild

import (
	"archive/tar"
	"compress/bzip2"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// BusyBox is built from its release tarball with upstream's default
// configuration, static, as Docker's busybox image (the e2e busybox
// image's base) builds it. Debian's own busybox will not do: its shell
// drops environment variables whose names are not shell names (the
// conformance specs read ConfigMap keys like data-1 back through
// `sh -c env`), and it runs its own applets before $PATH's programs, so
// agnhost's OpenBSD nc was never run. The tarball is the one Debian's
// archive holds as the package's upstream source, checked against its
// digest.
const (
	busyboxVersion = "1.37.0"
	busyboxURL     = "http://deb.debian.org/debian/pool/main/b/busybox/busybox_1.37.0.orig.tar.bz2"
	busyboxSHA256  = "3311dff32e746499f4df0d5df04d7eb396382d7e108bb9250e7b519b837043a4"
)

// busybox returns the path of the static busybox binary, built once per
// key (version, tarball digest, C compiler).
func (b *builder) busybox(ctx context.Context) (string, error) {
	cc, err := exec.CommandContext(ctx, "gcc", "-dumpfullversion").Output()
	if err != nil {
		return "", fmt.Errorf("busybox: gcc: %w", exitDetail(err))
	}

	var k key

	k.add("busybox", busyboxVersion, busyboxSHA256, "defconfig", "CONFIG_STATIC=y", strings.TrimSpace(string(cc)))

	dir := filepath.Join(b.opts.Cache, "build", "busybox-"+busyboxVersion+"-"+k.String()[:12])
	bin := filepath.Join(dir, "busybox")

	if complete(dir) {
		b.logf("busybox %s: up to date (%s)", busyboxVersion, dir)
		b.res.Cached++

		return bin, nil
	}

	b.logf("busybox %s: building from source (about a minute on 2 cores)", busyboxVersion)

	start := time.Now()

	tarball, err := b.fetchVerified(ctx, busyboxURL, busyboxSHA256)
	if err != nil {
		return "", fmt.Errorf("busybox: %w", err)
	}

	tmp, err := os.MkdirTemp(filepath.Join(b.opts.Cache, "build"), ".tmp-busybox-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)

	src := filepath.Join(tmp, "src")
	if err := untarBzip2(tarball, src); err != nil {
		return "", fmt.Errorf("busybox: %s: %w", tarball, err)
	}

	src = filepath.Join(src, "busybox-"+busyboxVersion)

	run := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "make", args...)
		cmd.Dir = src

		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("busybox: make %s: %w\n%s", strings.Join(args, " "), err, tail(out, 30))
		}

		return nil
	}

	if err := run("defconfig"); err != nil {
		return "", err
	}

	cfg := filepath.Join(src, ".config")

	data, err := os.ReadFile(cfg)
	if err != nil {
		return "", err
	}

	static := strings.Replace(string(data), "# CONFIG_STATIC is not set", "CONFIG_STATIC=y", 1)
	if static == string(data) {
		return "", errors.New("busybox: defconfig has no CONFIG_STATIC line to set")
	}

	if err := os.WriteFile(cfg, []byte(static), 0o644); err != nil {
		return "", err
	}

	if err := run("-j"+strconv.Itoa(runtime.NumCPU()), "busybox"); err != nil {
		return "", err
	}

	if err := os.Rename(filepath.Join(src, "busybox"), filepath.Join(tmp, "busybox")); err != nil {
		return "", err
	}

	if err := os.RemoveAll(filepath.Join(tmp, "src")); err != nil {
		return "", err
	}

	if err := finish(tmp, dir); err != nil {
		return "", err
	}

	b.logf("busybox %s: built in %s", busyboxVersion, time.Since(start).Round(time.Second))
	b.res.Built++

	return bin, nil
}

// fetchVerified downloads url into the cache's src directory once, and
// returns its path only if its SHA-256 is want.
func (b *builder) fetchVerified(ctx context.Context, url, want string) (string, error) {
	dst := filepath.Join(b.opts.Cache, "src", path.Base(url))

	if sum, err := fileDigest(dst); err == nil && sum == want {
		return dst, nil
	}

	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}

	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()

	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}

	tmp, err := os.CreateTemp(filepath.Dir(dst), ".tmp-fetch-")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()

	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(tmp, h), resp.Body); err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}

	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return "", fmt.Errorf("GET %s: sha256 %s, want %s", url, got, want)
	}

	if err := tmp.Close(); err != nil {
		return "", err
	}

	return dst, os.Rename(tmp.Name(), dst)
}

// untarBzip2 unpacks a .tar.bz2 of a source tree into dir: files with
// their modes (build scripts must stay executable), directories and
// symlinks; paths that would leave dir are refused.
func untarBzip2(file, dir string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()

	tr := tar.NewReader(bzip2.NewReader(f))

	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}

		if err != nil {
			return err
		}

		p := filepath.Join(dir, h.Name)
		if !strings.HasPrefix(p, filepath.Clean(dir)+string(os.PathSeparator)) {
			return fmt.Errorf("member %q leaves the tree", h.Name)
		}

		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeSymlink:
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				err = os.Symlink(h.Linkname, p)
			}
		case tar.TypeReg:
			err = writeMember(p, tr, os.FileMode(h.Mode).Perm())
		}

		if err != nil {
			return err
		}
	}
}

func writeMember(p string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}

	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}

	if _, err := io.Copy(f, r); err != nil {
		f.Close()

		return err
	}

	return f.Close()
}
