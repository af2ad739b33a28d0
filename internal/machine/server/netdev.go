package server

import (
	"context"
	"os"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/netstat"
)

// NetworkDeviceStats is /proc/net/dev of the node, with a total.
func (m *machineServer) NetworkDeviceStats(context.Context, *emptypb.Empty) (*machine.NetworkDeviceStatsResponse, error) {
	f, err := os.Open("/proc/net/dev")
	if err != nil {
		return nil, status.Errorf(codes.Internal, "network device stats: %v", err)
	}
	defer f.Close() //nolint:errcheck

	devs, err := netstat.ParseDevices(f)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "network device stats: %v", err)
	}

	total := &machine.NetDev{Name: "total"}
	out := &machine.NetworkDeviceStats{Total: total}

	for _, d := range devs {
		nd := netDev(d)
		out.Devices = append(out.Devices, nd)

		total.RxBytes += nd.RxBytes
		total.RxPackets += nd.RxPackets
		total.RxErrors += nd.RxErrors
		total.RxDropped += nd.RxDropped
		total.TxBytes += nd.TxBytes
		total.TxPackets += nd.TxPackets
		total.TxErrors += nd.TxErrors
		total.TxDropped += nd.TxDropped
	}

	return &machine.NetworkDeviceStatsResponse{Messages: []*machine.NetworkDeviceStats{out}}, nil
}

func netDev(d netstat.Device) *machine.NetDev {
	return &machine.NetDev{
		Name:    d.Name,
		RxBytes: d.Rx[0], RxPackets: d.Rx[1], RxErrors: d.Rx[2], RxDropped: d.Rx[3], RxFifo: d.Rx[4], RxFrame: d.Rx[5], RxCompressed: d.Rx[6], RxMulticast: d.Rx[7],
		TxBytes: d.Tx[0], TxPackets: d.Tx[1], TxErrors: d.Tx[2], TxDropped: d.Tx[3], TxFifo: d.Tx[4], TxCollisions: d.Tx[5], TxCarrier: d.Tx[6], TxCompressed: d.Tx[7],
	}
}
