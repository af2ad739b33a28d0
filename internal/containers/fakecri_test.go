package containers

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/talosbox/talosbox/internal/containers/containerdtest"
)

// fakePods are two pods as the CRI reports them: web, with a container
// restarted once (two attempts), and web-2, whose name extends web's.
func fakePods() []containerdtest.FakePod {
	return []containerdtest.FakePod{
		{
			Namespace: "default", Name: "web-2", UID: "u2", ID: "sb2", PID: 20, Ready: false, Image: "registry.k8s.io/pause:3.10",
			Containers: []containerdtest.FakeContainer{{ID: "c3", Name: "app", Image: "docker.io/library/nginx:1", LogPath: "/logs/web-2/app/0.log"}},
		},
		{
			Namespace: "default", Name: "web", UID: "u1", ID: "sb1", PID: 10, Ready: true, Image: "registry.k8s.io/pause:3.10",
			Containers: []containerdtest.FakeContainer{
				{ID: "c1old", Name: "app", Image: "docker.io/library/nginx:1", PID: 11, Attempt: 0, LogPath: "/logs/web/app/0.log"},
				{ID: "c1new", Name: "app", Image: "docker.io/library/nginx:1", PID: 12, Attempt: 1, Running: true, LogPath: "/logs/web/app/1.log", Memory: 5e6, CPU: 7e9},
			},
		},
	}
}

func TestListCRIFake(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "cri.sock")
	containerdtest.FakeCRI(t, sock, fakePods())

	cs, err := ListCRI(t.Context(), sock)
	if err != nil {
		t.Fatal(err)
	}

	var got []string
	for _, c := range cs {
		got = append(got, fmt.Sprintf("%s|%s|%s|%d|%s|%s", c.PodID, c.Display, c.Image, c.PID, c.Status, c.ID))
	}

	want := []string{
		"default/web|default/web|registry.k8s.io/pause:3.10|10|SANDBOX_READY|sb1",
		// Newest attempt first; an exited container has no PID.
		"default/web|default/web:app|docker.io/library/nginx:1|12|CONTAINER_RUNNING|c1new",
		"default/web|default/web:app|docker.io/library/nginx:1|0|CONTAINER_EXITED|c1old",
		"default/web-2|default/web-2|registry.k8s.io/pause:3.10|20|SANDBOX_NOTREADY|sb2",
		"default/web-2|default/web-2:app|docker.io/library/nginx:1|0|CONTAINER_EXITED|c3",
	}

	if !slices.Equal(got, want) {
		t.Errorf("ListCRI:\n got %q\nwant %q", got, want)
	}

	stats, err := StatsCRI(t.Context(), sock)
	if err != nil {
		t.Fatal(err)
	}

	got = nil
	for _, s := range stats {
		got = append(got, fmt.Sprintf("%s|%d|%d", s.ID, s.MemoryUsage, s.CPUUsage))
	}

	// Sandboxes count as zero; exited containers have nothing to measure.
	if want := []string{"sb1|0|0", "c1new|5000000|7000000000", "sb2|0|0"}; !slices.Equal(got, want) {
		t.Errorf("StatsCRI:\n got %q\nwant %q", got, want)
	}
}

func TestLogPathFake(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "cri.sock")
	containerdtest.FakeCRI(t, sock, fakePods())

	tests := []struct {
		ref, want string
		wantErr   error
	}{
		{ref: "default/web:app", want: "/logs/web/app/1.log"},
		{ref: "default/web:app:c1o", want: "/logs/web/app/0.log"},
		{ref: "default/web-2:app", want: "/logs/web-2/app/0.log"},
		{ref: "default/web:db", wantErr: ErrNotFound},
		{ref: "other/web:app", wantErr: ErrNotFound},
		{ref: "default/web:app:nope", wantErr: ErrNotFound},
		{ref: "default/web", wantErr: ErrInvalid},
	}

	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			got, err := LogPath(t.Context(), sock, tt.ref)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("LogPath = %q, %v; want %v", got, err, tt.wantErr)
				}

				if tt.wantErr == ErrNotFound && err.Error() != fmt.Sprintf("container %q not found", tt.ref) {
					t.Errorf("message %q", err)
				}

				return
			}

			if err != nil || got != tt.want {
				t.Fatalf("LogPath = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
