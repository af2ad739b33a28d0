package cri

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// snapshot is what a tree holds: path → mode and content, directories
// with a trailing slash.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()

	got := map[string]string{}

	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}

		rel, _ := filepath.Rel(root, p)

		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}

		if d.IsDir() {
			got[rel+"/"] = fi.Mode().Perm().String()

			return nil
		}

		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}

		got[rel] = fi.Mode().String() + " " + string(data)

		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	return got
}

func TestSyncTree(t *testing.T) {
	t.Parallel()

	type setup func(t *testing.T, root string)

	write := func(rel, data string, mode os.FileMode) setup {
		return func(t *testing.T, root string) {
			p := filepath.Join(root, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}

			if err := os.WriteFile(p, []byte(data), mode); err != nil {
				t.Fatal(err)
			}

			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
		}
	}

	mkdir := func(rel string) setup {
		return func(t *testing.T, root string) {
			if err := os.MkdirAll(filepath.Join(root, rel), 0o700); err != nil {
				t.Fatal(err)
			}
		}
	}

	hostsFiles := []File{
		{Path: "docker.io/hosts.toml", Mode: 0o600, Data: []byte("a")},
		{Path: "r_5000_/r:5000-ca.crt", Mode: 0o600, Data: []byte("ca")},
		{Path: "r_5000_/hosts.toml", Data: []byte("b")}, // mode 0 is 0600
	}

	wantHosts := map[string]string{
		"docker.io/":            "-rwx------",
		"docker.io/hosts.toml":  "-rw------- a",
		"r_5000_/":              "-rwx------",
		"r_5000_/hosts.toml":    "-rw------- b",
		"r_5000_/r:5000-ca.crt": "-rw------- ca",
	}

	tests := []struct {
		name        string
		setup       []setup
		files       []File
		want        map[string]string
		wantChanged bool
		wantErr     string
	}{
		{
			name:        "fresh tree",
			files:       hostsFiles,
			want:        wantHosts,
			wantChanged: true,
		},
		{
			name:  "up to date",
			setup: []setup{write("docker.io/hosts.toml", "a", 0o600), write("r_5000_/hosts.toml", "b", 0o600), write("r_5000_/r:5000-ca.crt", "ca", 0o600)},
			files: hostsFiles,
			want:  wantHosts,
		},
		{
			name: "stale files and directories removed",
			setup: []setup{
				write("docker.io/hosts.toml", "a", 0o600),
				write("docker.io/old-ca.crt", "x", 0o600),
				write("r_5000_/hosts.toml", "b", 0o600),
				write("r_5000_/r:5000-ca.crt", "ca", 0o600),
				write("gone.io/hosts.toml", "x", 0o600),
				write("gone.io/deep/er/file", "x", 0o600),
				mkdir("empty/dir"),
				write("docker.io/.hosts.toml.tmp-123", "torn", 0o600),
			},
			files:       hostsFiles,
			want:        wantHosts,
			wantChanged: true,
		},
		{
			name:        "content and mode updated",
			setup:       []setup{write("docker.io/hosts.toml", "old", 0o600), write("r_5000_/hosts.toml", "b", 0o644), write("r_5000_/r:5000-ca.crt", "ca", 0o600)},
			files:       hostsFiles,
			want:        wantHosts,
			wantChanged: true,
		},
		{
			name:        "file where a directory goes and the other way round",
			setup:       []setup{write("docker.io", "file", 0o600), mkdir("r_5000_/hosts.toml/sub"), write("r_5000_/r:5000-ca.crt", "ca", 0o600)},
			files:       hostsFiles,
			want:        wantHosts,
			wantChanged: true,
		},
		{
			name:        "empty file list empties the tree",
			setup:       []setup{write("docker.io/hosts.toml", "a", 0o600)},
			want:        map[string]string{},
			wantChanged: true,
		},
		{
			name:    "absolute path refused",
			files:   []File{{Path: "/etc/passwd"}},
			wantErr: `invalid path "/etc/passwd"`,
		},
		{
			name:    "escaping path refused",
			files:   []File{{Path: "a/../../x"}},
			wantErr: `invalid path "a/../../x"`,
		},
		{
			name:    "duplicate refused",
			files:   []File{{Path: "a"}, {Path: "./a"}},
			wantErr: `"./a" given twice`,
		},
		{
			name:    "file and directory at once refused",
			files:   []File{{Path: "a"}, {Path: "a/b"}},
			wantErr: `"a" is both a file and a directory`,
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			root := filepath.Join(t.TempDir(), "hosts")

			for _, s := range tt.setup {
				s(t, root)
			}

			changed, err := SyncTree(root, tt.files)

			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}

				return
			}

			if err != nil {
				t.Fatal(err)
			}

			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}

			if got := snapshot(t, root); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("tree:\n%q\nwant:\n%q", got, tt.want)
			}

			// A second sync finds nothing to do.
			if changed, err := SyncTree(root, tt.files); err != nil || changed {
				t.Errorf("second sync: changed %v, err %v", changed, err)
			}
		})
	}
}

// Unchanged files keep their inode and mtime, so nothing watching them
// sees a change; a changed one is replaced by a new file.
func TestSyncTreeLeavesUnchangedFiles(t *testing.T) {
	t.Parallel()

	root := t.TempDir()

	files := []File{
		{Path: "a/hosts.toml", Mode: 0o600, Data: []byte("a")},
		{Path: "b/hosts.toml", Mode: 0o600, Data: []byte("b")},
	}

	if _, err := SyncTree(root, files); err != nil {
		t.Fatal(err)
	}

	past := time.Now().Add(-time.Hour).Truncate(time.Second)

	for _, f := range files {
		if err := os.Chtimes(filepath.Join(root, f.Path), past, past); err != nil {
			t.Fatal(err)
		}
	}

	before, err := os.Stat(filepath.Join(root, "a/hosts.toml"))
	if err != nil {
		t.Fatal(err)
	}

	files[1].Data = []byte("b2")

	changed, err := SyncTree(root, files)
	if err != nil || !changed {
		t.Fatalf("changed %v, err %v", changed, err)
	}

	after, err := os.Stat(filepath.Join(root, "a/hosts.toml"))
	if err != nil {
		t.Fatal(err)
	}

	if !after.ModTime().Equal(past) || !os.SameFile(before, after) {
		t.Errorf("unchanged file was rewritten: mtime %v, want %v", after.ModTime(), past)
	}

	b, err := os.Stat(filepath.Join(root, "b/hosts.toml"))
	if err != nil {
		t.Fatal(err)
	}

	if b.ModTime().Equal(past) {
		t.Error("changed file kept its old mtime")
	}
}
