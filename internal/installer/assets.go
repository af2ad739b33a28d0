package installer

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
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

// Unpack reads an installer image's files (the flattened filesystem, so a
// later layer wins) and hands the kernel and the initramfs to sink. It
// fails with ErrNotInstaller, naming what is missing, if any is.
func Unpack(img v1.Image, sink Sink) (*Assets, error) {
	a := &Assets{Sizes: map[string]int64{}}

	if cf, err := img.ConfigFile(); err == nil && cf != nil {
		a.Version = cf.Config.Labels[VersionLabel]
	}

	rc := mutate.Extract(img)
	defer rc.Close()

	tr := tar.NewReader(rc)

	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}

		if err != nil {
			return nil, fmt.Errorf("read the installer image: %w", err)
		}

		name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		if h.Typeflag != tar.TypeReg {
			continue
		}

		switch name {
		case KernelPath, InitramfsPath:
			cr := &countReader{r: tr}
			if err := sink(name, cr); err != nil {
				return nil, err
			}

			a.Sizes[name] = cr.n
		case BootImgPath, CoreImgPath, EFIImgPath:
			if h.Size > 4<<20 {
				return nil, fmt.Errorf("installer image: /%s is %d bytes: too large for a GRUB image", name, h.Size)
			}

			data, err := io.ReadAll(tr)
			if err != nil {
				return nil, fmt.Errorf("read the installer image: %w", err)
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

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)

	return n, err
}
