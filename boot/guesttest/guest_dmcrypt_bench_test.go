//go:build e2e

package guesttest

// dm-crypt's cost in the guest: the same sequential O_DIRECT writes and
// reads on the ramdisk, plain and through the mapping, with dm-crypt's
// defaults and with the options Talos exposes (options: in the config).

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/internal/dm"
)

const (
	benchBytes = 32 << 20 // of the 64 MiB ramdisk
	benchIO    = 1 << 20
)

type rate struct{ write, read float64 } // MB/s

func (r rate) String() string { return fmt.Sprintf("write %.0f MB/s read %.0f MB/s", r.write, r.read) }

// throughput times benchBytes written then read with O_DIRECT at off.
func throughput(path string, off int64) (rate, error) {
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_DIRECT, 0)
	if err != nil {
		return rate{}, err
	}
	defer f.Close()

	buf, err := unix.Mmap(-1, 0, benchIO, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return rate{}, err
	}
	defer unix.Munmap(buf) //nolint:errcheck // the test is over

	for i := range buf {
		buf[i] = byte(i * 7)
	}

	timed := func(op func([]byte, int64) (int, error)) (float64, error) {
		start := time.Now()

		for o := int64(0); o < benchBytes; o += benchIO {
			if _, err := op(buf, off+o); err != nil {
				return 0, err
			}
		}

		return benchBytes / 1e6 / time.Since(start).Seconds(), nil
	}

	var r rate

	if r.write, err = timed(f.WriteAt); err != nil {
		return rate{}, err
	}

	if r.read, err = timed(f.ReadAt); err != nil {
		return rate{}, err
	}

	return r, nil
}

// cryptThroughput reports plain against encrypted (512-byte sectors,
// aes-xts-plain64 with a 512-bit key, as STATE and EPHEMERAL get).
func cryptThroughput() (string, error) {
	vk, seg, err := formatCryptDisk(512)
	if err != nil {
		return "", err
	}
	defer clear(vk)

	plain, err := throughput(cryptDisk, int64(seg.Offset))
	if err != nil {
		return "", fmt.Errorf("plain: %w", err)
	}

	mapped := func(opts ...string) (rate, error) {
		path, err := dm.MapLUKS2(cryptDisk, cryptName, vk, opts...)
		if err != nil {
			return rate{}, err
		}

		r, err := throughput(path, 0)
		if cerr := dm.CloseLUKS2(cryptName); err == nil {
			err = cerr
		}

		return r, err
	}

	crypt, err := mapped()
	if err != nil {
		return "", fmt.Errorf("dm-crypt: %w", err)
	}

	perf, err := mapped("no_read_workqueue", "no_write_workqueue")
	if err != nil {
		return "", fmt.Errorf("dm-crypt without workqueues: %w", err)
	}

	return fmt.Sprintf("throughput (%d MiB, O_DIRECT, 1 MiB I/O): plain %s; dm-crypt %s (%.2f, %.2f of plain); "+
		"no_read_workqueue,no_write_workqueue %s", benchBytes>>20, plain, crypt, crypt.write/plain.write, crypt.read/plain.read, perf), nil
}
