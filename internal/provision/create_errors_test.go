package provision

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

func TestCreateNameInUse(t *testing.T) {
	d := newDocker(t)
	image := tinyImage(t, d)
	name := clusterName()
	destroyOnCleanup(t, d, name)
	ctx := testCtx(t, 3*time.Minute)

	first := twoNodes(name, image, freeSubnet(t, d))
	first.Nodes = first.Nodes[:1]
	before, err := d.Create(ctx, first, nil)
	if err != nil {
		t.Fatal(err)
	}

	// The same cluster name, with a subnet and node names of its own.
	again := twoNodes(name, image, freeSubnet(t, d))
	again.Nodes[0].Name = name + "-other-1"
	again.Nodes = again.Nodes[:1]
	var ev events
	start := time.Now()
	_, err = d.Create(ctx, again, ev.add)
	t.Logf("refused in %s", time.Since(start))
	if !errors.Is(err, ErrNameInUse) || !strings.Contains(err.Error(), name) {
		t.Fatalf("second Create = %v, want ErrNameInUse naming %s", err, name)
	}
	t.Log(err)
	if len(ev.stages()) != 0 {
		t.Errorf("a refused create reported %v", ev.stages())
	}

	// A node name taken by another cluster's container.
	other := clusterName()
	destroyOnCleanup(t, d, other)
	clash := twoNodes(other, image, freeSubnet(t, d))
	clash.Nodes[0].Name = first.Nodes[0].Name
	if _, err := d.Create(ctx, clash, nil); !errors.Is(err, ErrNameInUse) || !strings.Contains(err.Error(), first.Nodes[0].Name) {
		t.Errorf("Create with a taken container name = %v, want ErrNameInUse naming it", err)
	}
	assertGone(t, d, other)

	// The first cluster is untouched.
	after, err := d.Show(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Nodes) != 1 || after.Nodes[0].ContainerID != before.Nodes[0].ContainerID ||
		after.Nodes[0].State != "running" || after.Network.CIDR != first.Network.CIDR {
		t.Errorf("first cluster changed: before %+v, after %+v", before, after)
	}
}

func TestCreateNetworkNameInUse(t *testing.T) {
	d := newDocker(t)
	image := tinyImage(t, d)
	name := clusterName()
	cidr := freeSubnet(t, d)
	plainNetwork(t, d, name, freeSubnet(t, d))
	destroyOnCleanup(t, d, name)

	_, err := d.Create(testCtx(t, time.Minute), twoNodes(name, image, cidr), nil)
	if !errors.Is(err, ErrNameInUse) || !strings.Contains(err.Error(), "network") {
		t.Fatalf("Create = %v, want ErrNameInUse for the network", err)
	}
	assertGone(t, d, name)
}

func TestCreateSubnetOverlap(t *testing.T) {
	d := newDocker(t)
	image := tinyImage(t, d)
	taken := freeSubnet(t, d)
	netName := clusterName() + "-plain"
	plainNetwork(t, d, netName, taken)
	name := clusterName()
	destroyOnCleanup(t, d, name)

	// The upper half of the taken /24.
	inside := netip.PrefixFrom(hostAddr(taken, 128), 25)
	req := twoNodes(name, image, inside)
	req.Nodes[0].IP, req.Nodes[1].IP = hostAddr(inside, 2), hostAddr(inside, 3)
	_, err := d.Create(testCtx(t, time.Minute), req, nil)
	if !errors.Is(err, ErrSubnetOverlap) || !strings.Contains(err.Error(), netName) {
		t.Fatalf("Create = %v, want ErrSubnetOverlap naming %s", err, netName)
	}
	t.Log(err)
	assertGone(t, d, name)
}

func TestCreateImageMissing(t *testing.T) {
	d := newDocker(t)
	name := clusterName()
	destroyOnCleanup(t, d, name)
	_, err := d.Create(testCtx(t, time.Minute), twoNodes(name, "talosbox-provision-test:never-built", freeSubnet(t, d)), nil)
	if !errors.Is(err, ErrImageNotFound) {
		t.Fatalf("Create = %v, want ErrImageNotFound", err)
	}
	assertGone(t, d, name)
}

func TestCreateRollsBackOnFailure(t *testing.T) {
	d := newDocker(t)
	image := tinyImage(t, d)
	name := clusterName()
	destroyOnCleanup(t, d, name)

	// The engine refuses the second node (validation leaves capabilities to it), after the
	// first one is running.
	req := twoNodes(name, image, freeSubnet(t, d))
	req.Nodes[1].Privileges.CapAdd = []string{"CAP_TBTEST_BOGUS"}
	var ev events
	_, err := d.Create(testCtx(t, 2*time.Minute), req, ev.add)
	if err == nil {
		t.Fatal("Create with a bogus capability succeeded")
	}
	t.Log(err)
	if !strings.Contains(err.Error(), "removed") {
		t.Errorf("error does not say the partial cluster was removed: %v", err)
	}
	if ev.count(StageContainerStarted) != 1 || ev.count(StageRollback) != 1 || ev.count(StageNetworkRemoved) != 1 {
		t.Errorf("events %v, want one node started, then a rollback", ev.stages())
	}
	assertGone(t, d, name)
}

func TestCreateCanceledMidway(t *testing.T) {
	d := newDocker(t)
	image := tinyImage(t, d)
	name := clusterName()
	destroyOnCleanup(t, d, name)

	// Cancel as the CLI's SIGINT would, once the first node runs.
	ctx, cancel := context.WithCancel(testCtx(t, 2*time.Minute))
	defer cancel()
	var ev events
	_, err := d.Create(ctx, twoNodes(name, image, freeSubnet(t, d)), func(e Event) {
		t.Log(e)
		ev.add(e)
		if e.Stage == StageContainerStarted {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Create = %v, want context.Canceled", err)
	}
	t.Log(err)
	if ev.count(StageContainerStarted) != 1 || ev.count(StageContainerRemoved) != 1 || ev.count(StageVolumeRemoved) != 2 {
		t.Errorf("events %v", ev.stages())
	}
	assertGone(t, d, name)
}

func TestDestroyMissing(t *testing.T) {
	d := newDocker(t)
	name := clusterName()
	err := d.Destroy(testCtx(t, time.Minute), name, nil)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), name) {
		t.Fatalf("Destroy = %v, want ErrNotFound naming %s", err, name)
	}
	if _, err := d.Show(testCtx(t, time.Minute), name); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Show = %v, want ErrNotFound", err)
	}
}

// plainNetwork creates a network that is not a cluster's, removed when the test ends.
func plainNetwork(t *testing.T, d *Docker, name string, cidr netip.Prefix) {
	t.Helper()
	res, err := d.api.NetworkCreate(testCtx(t, time.Minute), name, client.NetworkCreateOptions{
		Driver: "bridge",
		IPAM:   &network.IPAM{Config: []network.IPAMConfig{{Subnet: cidr}}},
		Labels: map[string]string{testLabel: "1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := d.api.NetworkRemove(ctx, res.ID, client.NetworkRemoveOptions{}); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
}
