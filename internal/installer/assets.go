package installer

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Assets are the boot files of an installer image: the small ones in
// memory, the kernel and initramfs already written by Unpack's sink.
type Assets struct {
	Version string
	BootImg []byte
	CoreImg []byte
	// EFIImg is GRUB for UEFI (EFIImgPath), nil in an image from before
	// UEFI.
	EFIImg []byte
	// Sizes of what the sink got, by image path.
	Sizes map[string]int64
}

// ErrNotInstaller is Unpack's answer for an image that lacks one of the
// installer's files.
var ErrNotInstaller = errors.New("not an installer image")

// Sink receives the kernel (KernelPath) and the initramfs (InitramfsPath)
// as Unpack streams them out of the image.
type Sink func(name string, r io.Reader) error

// Unpack reads an installer image's files and hands the kernel and the
// initramfs to sink. The layers are read from the top down, each file
// taken from the highest layer that has it (a whiteout above hides it, as
// in the flattened filesystem), and reading stops once every file is
// found: the layers below (the installer's own binary, for its ONBUILD
// customization) are neither downloaded nor unpacked. It fails with
// ErrNotInstaller, naming what is missing, if any is.
func Unpack(img v1.Image, sink Sink) (*Assets, error) {
	a := &Assets{Sizes: map[string]int64{}}

	if cf, err := img.ConfigFile(); err == nil && cf != nil {
		a.Version = cf.Config.Labels[VersionLabel]
	}

	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("read the installer image: %w", err)
	}

	// What is still looked for; EFIImgPath is optional, and found or
	// hidden ends the search for a path.
	want := map[string]bool{KernelPath: true, InitramfsPath: true, BootImgPath: true, CoreImgPath: true, EFIImgPath: true}

	for i := len(layers) - 1; i >= 0 && len(want) > 0; i-- {
		if err := a.unpackLayer(layers[i], want, sink); err != nil {
			return nil, err
		}
	}

	var missing []string

	for _, p := range []string{KernelPath, InitramfsPath, BootImgPath, CoreImgPath} {
		if _, ok := a.Sizes[p]; !ok {
			missing = append(missing, "/"+p)
		}
	}

	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: it has no %s", ErrNotInstaller, strings.Join(missing, ", no "))
	}

	return a, nil
}

// unpackLayer takes from one layer the wanted files it holds, and drops
// from want those it holds or whites out.
func (a *Assets) unpackLayer(l v1.Layer, want map[string]bool, sink Sink) error {
	rc, err := l.Uncompressed()
	if err != nil {
		return fmt.Errorf("read the installer image: %w", err)
	}
	defer rc.Close()

	tr := tar.NewReader(rc)

	// Hidden paths take effect after the layer: its own files stay.
	var hidden []func(string) bool

	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}

		if err != nil {
			return fmt.Errorf("read the installer image: %w", err)
		}

		name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		dir, base := path.Split(name)

		switch {
		case base == ".wh..wh..opq":
			hidden = append(hidden, func(p string) bool { return strings.HasPrefix(p, dir) })
			continue
		case strings.HasPrefix(base, ".wh."):
			gone := dir + strings.TrimPrefix(base, ".wh.")
			hidden = append(hidden, func(p string) bool { return p == gone || strings.HasPrefix(p, gone+"/") })

			continue
		case h.Typeflag != tar.TypeReg || !want[name]:
			continue
		}

		delete(want, name)

		if err := a.take(name, h, tr, sink); err != nil {
			return err
		}
	}

	for p := range want {
		for _, gone := range hidden {
			if gone(p) {
				delete(want, p)
			}
		}
	}

	return nil
}

// take reads one wanted file.
func (a *Assets) take(name string, h *tar.Header, r io.Reader, sink Sink) error {
	switch name {
	case KernelPath, InitramfsPath:
		cr := &countReader{r: r}
		if err := sink(name, cr); err != nil {
			return err
		}

		a.Sizes[name] = cr.n

		return nil
	}

	if h.Size > 4<<20 {
		return fmt.Errorf("installer image: /%s is %d bytes: too large for a GRUB image", name, h.Size)
	}

	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("read the installer image: %w", err)
	}

	switch name {
	case BootImgPath:
		a.BootImg = data
	case CoreImgPath:
		a.CoreImg = data
	default:
		a.EFIImg = data
	}

	a.Sizes[name] = int64(len(data))

	return nil
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)

	return n, err
}
