package containers

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criClient is a CRI runtime service client and its connection.
type criClient struct {
	addr string
	conn *grpc.ClientConn
	rt   runtimeapi.RuntimeServiceClient
}

// dialCRI connects to the CRI served on the containerd socket at addr.
func dialCRI(addr string) (*criClient, error) {
	if err := checkSocket(addr); err != nil {
		return nil, err
	}

	conn, err := grpc.NewClient("unix://"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("CRI at %s: %w", addr, err)
	}

	return &criClient{addr: addr, conn: conn, rt: runtimeapi.NewRuntimeServiceClient(conn)}, nil
}

func (c *criClient) Close() error { return c.conn.Close() }

// ListCRI is what the CRI at addr runs for Kubernetes: every pod's
// sandbox ("<ns>/<pod>") and its containers ("<ns>/<pod>:<container>"),
// in Sort's order, with the CRI's own statuses and the images by name.
func ListCRI(ctx context.Context, addr string) ([]Container, error) {
	c, err := dialCRI(addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()

	return c.list(ctx)
}

// StatsCRI is ListCRI with each container's usage as the CRI measures
// it (sandboxes count as zero, as in Talos).
func StatsCRI(ctx context.Context, addr string) ([]Stat, error) {
	c, err := dialCRI(addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()

	cs, err := c.list(ctx)
	if err != nil {
		return nil, err
	}

	resp, err := c.rt.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{})
	if err != nil {
		return nil, c.error("container stats", err)
	}

	usage := map[string]*runtimeapi.ContainerStats{}
	for _, s := range resp.GetStats() {
		usage[s.GetAttributes().GetId()] = s
	}

	out := make([]Stat, 0, len(cs))

	for _, ctr := range cs {
		s := Stat{Container: ctr}

		if u := usage[ctr.ID]; u != nil {
			s.MemoryUsage = u.GetMemory().GetWorkingSetBytes().GetValue()
			s.CPUUsage = u.GetCpu().GetUsageCoreNanoSeconds().GetValue()
		} else if !ctr.Sandbox && ctr.Status != StatusContainerRunning {
			// Only running containers have a cgroup to measure.
			continue
		}

		out = append(out, s)
	}

	return out, nil
}

func (c *criClient) error(what string, err error) error {
	return rpcError(c.addr, "CRI "+what, err)
}

func (c *criClient) list(ctx context.Context) ([]Container, error) {
	sandboxes, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return nil, c.error("list pod sandboxes", err)
	}

	containers, err := c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return nil, c.error("list containers", err)
	}

	out := make([]Container, 0, len(sandboxes.GetItems())+len(containers.GetContainers()))
	pods := map[string]string{} // sandbox ID -> "<ns>/<pod>"

	for _, sb := range sandboxes.GetItems() {
		ctr, err := c.sandbox(ctx, sb)
		if err != nil {
			return nil, err
		}

		pods[sb.GetId()] = ctr.PodID
		out = append(out, ctr)
	}

	for _, cnt := range containers.GetContainers() {
		ctr, ok, err := c.container(ctx, cnt, pods)
		if err != nil {
			return nil, err
		}

		if ok {
			out = append(out, ctr)
		}
	}

	Sort(out)

	return out, nil
}

// sandboxInfo is what we read of the CRI's verbose sandbox status.
type sandboxInfo struct {
	Pid         uint32 `json:"pid"`
	Image       string `json:"image"`
	RuntimeSpec struct {
		Linux struct {
			Namespaces []struct {
				Type string `json:"type"`
				Path string `json:"path"`
			} `json:"namespaces"`
		} `json:"linux"`
	} `json:"runtimeSpec"`
}

func (c *criClient) sandbox(ctx context.Context, sb *runtimeapi.PodSandbox) (Container, error) {
	md := sb.GetMetadata()
	podID := md.GetNamespace() + "/" + md.GetName()

	ctr := Container{
		Namespace: K8sNamespace,
		ID:        sb.GetId(),
		Display:   podID,
		PodID:     podID,
		Name:      podID,
		UID:       md.GetUid(),
		Status:    sb.GetState().String(),
		Sandbox:   true,
		Attempt:   md.GetAttempt(),
		CreatedAt: time.Unix(0, sb.GetCreatedAt()),
	}

	st, err := c.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb.GetId(), Verbose: true})
	if isNotFound(err) {
		return ctr, nil // removed meanwhile: list what ListPodSandbox said
	}

	if err != nil {
		return Container{}, c.error("pod sandbox status "+podID, err)
	}

	var info sandboxInfo
	if raw, ok := st.GetInfo()["info"]; ok && json.Unmarshal([]byte(raw), &info) == nil {
		ctr.PID = info.Pid
		ctr.Image = info.Image

		for _, ns := range info.RuntimeSpec.Linux.Namespaces {
			if ns.Type == "network" && ns.Path != "" {
				ctr.NetworkNamespace = path.Base(ns.Path)
			}
		}
	}

	return ctr, nil
}

// containerInfo is what we read of the CRI's verbose container status.
type containerInfo struct {
	Pid uint32 `json:"pid"`
}

// container describes one CRI container; ok is false if it was removed
// while listing.
func (c *criClient) container(ctx context.Context, cnt *runtimeapi.Container, pods map[string]string) (Container, bool, error) {
	podID := pods[cnt.GetPodSandboxId()]
	if ns, pod := cnt.GetLabels()[labelPodNamespace], cnt.GetLabels()[labelPodName]; ns != "" && pod != "" {
		podID = ns + "/" + pod
	}

	name := cnt.GetMetadata().GetName()

	ctr := Container{
		Namespace: K8sNamespace,
		ID:        cnt.GetId(),
		Display:   podID + ":" + name,
		PodID:     podID,
		Name:      name,
		UID:       cnt.GetLabels()[labelPodUID],
		Image:     cnt.GetImage().GetImage(),
		Status:    cnt.GetState().String(),
		Attempt:   cnt.GetMetadata().GetAttempt(),
		CreatedAt: time.Unix(0, cnt.GetCreatedAt()),
	}

	st, err := c.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: cnt.GetId(), Verbose: true})
	if isNotFound(err) {
		return Container{}, false, nil
	}

	if err != nil {
		return Container{}, false, c.error("container status "+ctr.Display, err)
	}

	// The status names the image by its tag; the listing by its ID.
	if img := st.GetStatus().GetImage().GetImage(); img != "" {
		ctr.Image = img
	}

	var info containerInfo
	if raw, ok := st.GetInfo()["info"]; ok && json.Unmarshal([]byte(raw), &info) == nil && ctr.Status == StatusContainerRunning {
		ctr.PID = info.Pid
	}

	return ctr, true, nil
}

// LogPath resolves a Kubernetes container ("<ns>/<pod>:<container>") to
// the log file the CRI writes for it. Of several attempts (restarts) it
// is the newest's, as kubectl logs shows.
func LogPath(ctx context.Context, addr, ref string) (string, error) {
	r, err := ParseRef(ref)
	if err != nil {
		return "", err
	}

	if r.Container == "" {
		return "", errorf(ErrInvalid, "%q is a pod: logs are a container's, name one as %s:<container>", ref, ref)
	}

	c, err := dialCRI(addr)
	if err != nil {
		return "", err
	}
	defer c.Close()

	// The pod and container are found by their CRI metadata, which every
	// CRI client sets; the io.kubernetes.* labels are the kubelet's habit,
	// not the CRI's contract.
	pods, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return "", c.error("list pods", err)
	}

	var matches []*runtimeapi.Container

	for _, p := range pods.GetItems() {
		if md := p.GetMetadata(); md.GetNamespace() != r.Namespace || md.GetName() != r.Pod {
			continue
		}

		resp, err := c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: p.GetId()}})
		if err != nil {
			return "", c.error("list containers", err)
		}

		for _, cnt := range resp.GetContainers() {
			if cnt.GetMetadata().GetName() == r.Container {
				matches = append(matches, cnt)
			}
		}
	}

	cnt := newest(matches, r.IDPrefix)
	if cnt == nil {
		return "", errorf(ErrNotFound, "container %q not found", ref)
	}

	st, err := c.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: cnt.GetId()})
	if isNotFound(err) {
		return "", errorf(ErrNotFound, "container %q not found", ref)
	}

	if err != nil {
		return "", c.error("container status "+ref, err)
	}

	if st.GetStatus().GetLogPath() == "" {
		return "", errorf(ErrNotFound, "container %q has no log file", ref)
	}

	return st.GetStatus().GetLogPath(), nil
}

// newest is the container with the highest attempt (then the latest
// created) among those whose ID starts with prefix.
func newest(cs []*runtimeapi.Container, prefix string) *runtimeapi.Container {
	cs = slices.DeleteFunc(slices.Clone(cs), func(c *runtimeapi.Container) bool {
		return !strings.HasPrefix(c.GetId(), prefix)
	})

	if len(cs) == 0 {
		return nil
	}

	return slices.MaxFunc(cs, func(a, b *runtimeapi.Container) int {
		return cmp.Or(
			cmp.Compare(a.GetMetadata().GetAttempt(), b.GetMetadata().GetAttempt()),
			cmp.Compare(a.GetCreatedAt(), b.GetCreatedAt()),
		)
	})
}

// isNotFound reports the CRI's answer for an ID that is gone.
func isNotFound(err error) bool {
	return status.Code(err) == codes.NotFound
}
