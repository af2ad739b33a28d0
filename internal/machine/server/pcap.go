package server

import (
	"golang.org/x/net/bpf"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/pcap"
)

// maxFilterLen is the kernel's BPF_MAXINSNS for classic programs.
const maxFilterLen = 4096

// PacketCapture is `talosctl pcap`: a pcap file streamed until the
// client hangs up (or its --duration ends it).
func (m *machineServer) PacketCapture(req *machine.PacketCaptureRequest, stream machine.MachineService_PacketCaptureServer) error {
	if req.GetInterface() == "" {
		return status.Error(codes.InvalidArgument, "pcap: an interface is required")
	}

	if len(req.GetBpfFilter()) > maxFilterLen {
		return status.Errorf(codes.InvalidArgument, "pcap: the filter has %d instructions, the kernel takes at most %d", len(req.GetBpfFilter()), maxFilterLen)
	}

	filter := make([]bpf.RawInstruction, len(req.GetBpfFilter()))
	for i, ins := range req.GetBpfFilter() {
		if ins.GetOp() > 0xffff || ins.GetJt() > 0xff || ins.GetJf() > 0xff {
			return status.Errorf(codes.InvalidArgument, "pcap: filter instruction %d is out of range", i)
		}

		filter[i] = bpf.RawInstruction{Op: uint16(ins.GetOp()), Jt: uint8(ins.GetJt()), Jf: uint8(ins.GetJf()), K: ins.GetK()}
	}

	w := &chunkWriter{send: stream.Send}

	err := pcap.Capture(stream.Context(), w, pcap.Options{
		Interface: req.GetInterface(), Promiscuous: req.GetPromiscuous(), SnapLen: req.GetSnapLen(), Filter: filter,
	})
	if err != nil {
		return status.Error(codes.FailedPrecondition, err.Error())
	}

	return nil
}

// chunkWriter sends what was written as one message per Flush: a packet
// (with its record header) per message, rather than one per Write call.
type chunkWriter struct {
	buf  []byte
	send func(*common.Data) error
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)

	return len(p), nil
}

func (w *chunkWriter) Flush() error {
	if len(w.buf) == 0 {
		return nil
	}

	err := w.send(&common.Data{Bytes: w.buf})
	w.buf = nil

	return err
}
