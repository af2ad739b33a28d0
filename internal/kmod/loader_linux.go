package kmod

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// kernelLoader makes the real system calls. It does what u-root's
// pkg/kmodule FileInit does, directly on golang.org/x/sys: pkg/kmodule
// pulls in xz and zstd decoders whose modules this build does not carry,
// and the kernel can decompress those formats itself.
type kernelLoader struct{}

func (kernelLoader) load(path, params string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()

	flags := 0

	switch filepath.Ext(path) {
	case ".ko":
	case ".gz":
		// Decompressing here works on kernels built without
		// CONFIG_MODULE_DECOMPRESS, which Debian's are.
		zr, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("decompress %s: %w", path, err)
		}

		img, err := io.ReadAll(zr)
		if err != nil {
			return fmt.Errorf("decompress %s: %w", path, err)
		}

		return os.NewSyscallError("init_module", unix.InitModule(img, params))
	case ".xz", ".zst":
		flags = unix.MODULE_INIT_COMPRESSED_FILE
	default:
		return fmt.Errorf("%s: not a kernel module file (.ko, .ko.gz, .ko.xz or .ko.zst)", path)
	}

	err = unix.FinitModule(int(f.Fd()), params, flags)
	if errors.Is(err, unix.ENOSYS) && flags == 0 {
		// Kernels before 3.8 have only init_module.
		img, rerr := io.ReadAll(f)
		if rerr != nil {
			return fmt.Errorf("read %s: %w", path, rerr)
		}

		return os.NewSyscallError("init_module", unix.InitModule(img, params))
	}

	return os.NewSyscallError("finit_module", err)
}
