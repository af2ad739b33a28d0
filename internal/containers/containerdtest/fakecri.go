package containerdtest

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// FakePod is a pod as a fake CRI reports it.
type FakePod struct {
	Namespace, Name, UID string
	// ID is the sandbox's ID.
	ID    string
	PID   uint32
	Ready bool
	// Image is the sandbox (pause) image.
	Image      string
	Containers []FakeContainer
}

// FakeContainer is one of a fake pod's containers.
type FakeContainer struct {
	ID, Name string
	// Image is the image's tag, as ContainerStatus names it.
	Image   string
	PID     uint32
	Running bool
	Attempt uint32
	// LogPath is the CRI log file it reports.
	LogPath string
	// Memory (working set, bytes) and CPU (ns) are its stats when running.
	Memory, CPU uint64
}

// FakeCRI serves a CRI runtime service reporting pods on the unix socket
// path socket until the test ends: what running pods look like, where a
// test cannot run them (no CNI, no images of real binaries).
func FakeCRI(t testing.TB, socket string, pods []FakePod) {
	t.Helper()

	if err := os.MkdirAll(filepath.Dir(socket), 0o755); err != nil {
		t.Fatal(err)
	}

	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}

	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, &fakeCRI{pods: pods, created: time.Now()})

	done := make(chan struct{})

	go func() {
		defer close(done)

		srv.Serve(l) //nolint:errcheck // ends with Stop
	}()

	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
}

type fakeCRI struct {
	runtimeapi.UnimplementedRuntimeServiceServer

	pods    []FakePod
	created time.Time
}

// labels are the CRI's labels of a pod's sandbox or container.
func (p *FakePod) labels(container string) map[string]string {
	l := map[string]string{
		"io.kubernetes.pod.namespace": p.Namespace,
		"io.kubernetes.pod.name":      p.Name,
		"io.kubernetes.pod.uid":       p.UID,
	}

	if container != "" {
		l["io.kubernetes.container.name"] = container
	}

	return l
}

func (f *fakeCRI) ListPodSandbox(context.Context, *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	var items []*runtimeapi.PodSandbox

	for i := range f.pods {
		p := &f.pods[i]
		items = append(items, &runtimeapi.PodSandbox{
			Id:        p.ID,
			Metadata:  &runtimeapi.PodSandboxMetadata{Name: p.Name, Namespace: p.Namespace, Uid: p.UID},
			State:     sandboxState(p.Ready),
			CreatedAt: f.created.UnixNano(),
			Labels:    p.labels(""),
		})
	}

	return &runtimeapi.ListPodSandboxResponse{Items: items}, nil
}

func (f *fakeCRI) PodSandboxStatus(_ context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	for i := range f.pods {
		if p := &f.pods[i]; p.ID == req.GetPodSandboxId() {
			info, _ := json.Marshal(map[string]any{"pid": p.PID, "image": p.Image}) //nolint:errchkjson // plain values

			return &runtimeapi.PodSandboxStatusResponse{
				Status: &runtimeapi.PodSandboxStatus{Id: p.ID, State: sandboxState(p.Ready)},
				Info:   map[string]string{"info": string(info)},
			}, nil
		}
	}

	return nil, status.Errorf(codes.NotFound, "sandbox %q not found", req.GetPodSandboxId())
}

func (f *fakeCRI) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	var out []*runtimeapi.Container

	for i := range f.pods {
		p := &f.pods[i]

		if id := req.GetFilter().GetPodSandboxId(); id != "" && id != p.ID {
			continue
		}

		for _, c := range p.Containers {
			labels := p.labels(c.Name)
			if !matches(labels, req.GetFilter().GetLabelSelector()) {
				continue
			}

			out = append(out, &runtimeapi.Container{
				Id:           c.ID,
				PodSandboxId: p.ID,
				Metadata:     &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: c.Attempt},
				// The CRI lists the image by its ID.
				Image:     &runtimeapi.ImageSpec{Image: "sha256:" + c.ID},
				State:     containerState(c.Running),
				CreatedAt: f.created.Add(time.Duration(c.Attempt) * time.Second).UnixNano(),
				Labels:    labels,
			})
		}
	}

	return &runtimeapi.ListContainersResponse{Containers: out}, nil
}

func matches(labels, selector map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}

	return true
}

func (f *fakeCRI) container(id string) (*FakeContainer, bool) {
	for i := range f.pods {
		for j := range f.pods[i].Containers {
			if c := &f.pods[i].Containers[j]; c.ID == id {
				return c, true
			}
		}
	}

	return nil, false
}

func (f *fakeCRI) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	c, ok := f.container(req.GetContainerId())
	if !ok {
		return nil, status.Errorf(codes.NotFound, "container %q not found", req.GetContainerId())
	}

	info, _ := json.Marshal(map[string]any{"pid": c.PID}) //nolint:errchkjson // plain values

	return &runtimeapi.ContainerStatusResponse{
		Status: &runtimeapi.ContainerStatus{
			Id:       c.ID,
			Metadata: &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: c.Attempt},
			State:    containerState(c.Running),
			Image:    &runtimeapi.ImageSpec{Image: c.Image},
			LogPath:  c.LogPath,
		},
		Info: map[string]string{"info": string(info)},
	}, nil
}

func (f *fakeCRI) ListContainerStats(context.Context, *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	var out []*runtimeapi.ContainerStats

	for i := range f.pods {
		for _, c := range f.pods[i].Containers {
			if !c.Running {
				continue
			}

			out = append(out, &runtimeapi.ContainerStats{
				Attributes: &runtimeapi.ContainerAttributes{Id: c.ID},
				Cpu:        &runtimeapi.CpuUsage{UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: c.CPU}},
				Memory:     &runtimeapi.MemoryUsage{WorkingSetBytes: &runtimeapi.UInt64Value{Value: c.Memory}},
			})
		}
	}

	return &runtimeapi.ListContainerStatsResponse{Stats: out}, nil
}

func sandboxState(ready bool) runtimeapi.PodSandboxState {
	if ready {
		return runtimeapi.PodSandboxState_SANDBOX_READY
	}

	return runtimeapi.PodSandboxState_SANDBOX_NOTREADY
}

func containerState(running bool) runtimeapi.ContainerState {
	if running {
		return runtimeapi.ContainerState_CONTAINER_RUNNING
	}

	return runtimeapi.ContainerState_CONTAINER_EXITED
}
