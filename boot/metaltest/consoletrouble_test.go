//go:build e2e

package metaltest

import "testing"

func TestConsoleTrouble(t *testing.T) {
	for _, tc := range []struct {
		line           string
		trouble, noise bool
	}{
		{"[    1.234567] virtio_blk virtio1: [vda] 4194304 512-byte logical blocks", false, false},
		{"[   12.000000] EXT4-fs error (device vda5): ext4_lookup:1785: inode #2", true, false},
		{"[    3.100000] WARNING: CPU: 1 PID: 1 at fs/xfs/xfs_buf.c:1234 xfs_buf_ioend+0x1/0x2 [xfs]", true, false},
		{"[  128.566923] WARNING: CPU: 0 PID: 7 at drivers/virtio/virtio_balloon.c:178 virtballoon_free_page_report+0x10c/0x120 [virtio_balloon]\r", true, true},
		{"[    9.000000] Kernel panic - not syncing: Attempted to kill init!", true, false},
		{"goroutine 1 [running]:", true, false},
	} {
		trouble, noise := consoleTrouble(tc.line)
		if trouble != tc.trouble || noise != tc.noise {
			t.Errorf("consoleTrouble(%q) = %v, %v; want %v, %v", tc.line, trouble, noise, tc.trouble, tc.noise)
		}
	}
}
