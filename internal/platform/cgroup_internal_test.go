package platform

import (
	"reflect"
	"strings"
	"testing"
)

func TestCgroupPlan(t *testing.T) {
	for _, tc := range []struct {
		name, procCgroup string
		mounts           []cgroupMount
		links            map[string]string
	}{
		{
			name:       "unified",
			procCgroup: "0::/\n",
			mounts:     []cgroupMount{{fstype: "cgroup2"}},
		},
		{
			name:       "v1 with separate cpu and cpuacct, as this CI host",
			procCgroup: "9:name=systemd:/\n8:pids:/\n4:cpuacct:/\n3:cpu:/\n2:memory:/\n",
			mounts: []cgroupMount{
				{fstype: "tmpfs", data: "mode=0755"},
				{dir: "cpu", fstype: "cgroup", data: "cpu"},
				{dir: "cpuacct", fstype: "cgroup", data: "cpuacct"},
				{dir: "memory", fstype: "cgroup", data: "memory"},
				{dir: "pids", fstype: "cgroup", data: "pids"},
				{dir: "systemd", fstype: "cgroup", data: "name=systemd"},
			},
			links: map[string]string{},
		},
		{
			name:       "hybrid with combined controllers",
			procCgroup: "5:cpu,cpuacct:/\n1:name=systemd:/\n0::/\n",
			mounts: []cgroupMount{
				{fstype: "tmpfs", data: "mode=0755"},
				{dir: "cpu,cpuacct", fstype: "cgroup", data: "cpu,cpuacct"},
				{dir: "systemd", fstype: "cgroup", data: "name=systemd"},
			},
			links: map[string]string{"cpu": "cpu,cpuacct", "cpuacct": "cpu,cpuacct"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs, err := parseProcCgroup(strings.NewReader(tc.procCgroup))
			if err != nil {
				t.Fatal(err)
			}

			mounts, links := cgroupPlan(hs)
			if !reflect.DeepEqual(mounts, tc.mounts) || !reflect.DeepEqual(links, tc.links) {
				t.Fatalf("plan:\n got %+v %v\nwant %+v %v", mounts, links, tc.mounts, tc.links)
			}
		})
	}

	if _, err := parseProcCgroup(strings.NewReader("garbage\n")); err == nil {
		t.Fatal("a malformed line was accepted")
	}
}
