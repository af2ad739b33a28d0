package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/containers"
	"github.com/talosbox/talosbox/internal/events"
	"github.com/talosbox/talosbox/internal/logring"
	"github.com/talosbox/talosbox/internal/supervisor"
)

// chunkSize is how much a stream message carries at most.
const chunkSize = 32 << 10

// Logs streams a service's log ring ("machined" is the node's own log,
// "controller-runtime" its controllers'),
// from tail_lines back (-1: everything retained), following if asked.
// A Kubernetes container's log (driver CRI or namespace k8s.io) is its
// CRI log file; the kubelet, a service, is served from its ring either
// way, as in Talos.
func (m *machineServer) Logs(req *machine.LogsRequest, srv grpc.ServerStreamingServer[common.Data]) error {
	ns := req.GetNamespace()

	if (req.GetDriver() == common.ContainerDriver_CRI || ns == containers.K8sNamespace) && req.GetId() != "kubelet" {
		return m.containerLogs(req, srv)
	}

	if ns != "" && ns != containers.SystemNamespace {
		return status.Errorf(codes.InvalidArgument, "logs: namespace %q is not served: system services and (namespace %s) Kubernetes containers have logs", ns, containers.K8sNamespace)
	}

	var ring *logring.Ring

	switch req.GetId() {
	case "machined":
		ring = m.node.Log()
	case "controller-runtime":
		ring = m.node.ControllerLog()
	default:
		sup, err := m.supervisor()
		if err != nil {
			return err
		}

		if ring, err = sup.Logs(req.GetId()); err != nil {
			if errors.Is(err, supervisor.ErrUnknownService) {
				return status.Error(codes.NotFound, err.Error())
			}

			return status.Error(codes.Internal, err.Error())
		}
	}

	rd := ring.Reader(logring.ReadOptions{TailLines: int(req.GetTailLines()), Follow: req.GetFollow()})
	defer rd.Close()

	// A following Read blocks until there is more; the call's end must
	// wake it.
	stop := context.AfterFunc(srv.Context(), func() { rd.Close() })
	defer stop()

	return sendChunks(srv, rd)
}

// sendChunks streams r as common.Data messages until EOF.
func sendChunks(srv grpc.ServerStreamingServer[common.Data], r io.Reader) error {
	buf := make([]byte, chunkSize)

	for {
		n, err := r.Read(buf)
		if n > 0 {
			if serr := srv.Send(&common.Data{Bytes: append([]byte(nil), buf[:n]...)}); serr != nil {
				return serr
			}
		}

		if errors.Is(err, io.EOF) {
			return srv.Context().Err()
		}

		if err != nil {
			return status.Errorf(codes.Internal, "read: %v", err)
		}
	}
}

// Events streams the node's events: the tail asked for, then new ones.
func (m *machineServer) Events(req *machine.EventsRequest, srv grpc.ServerStreamingServer[machine.Event]) error {
	ch := m.events.Watch(srv.Context(), events.WatchOptions{
		TailEvents:  int(req.GetTailEvents()),
		TailID:      req.GetTailId(),
		TailSeconds: int(req.GetTailSeconds()),
	})

	for ev := range ch {
		if err := srv.Send(&machine.Event{
			Id:      ev.ID,
			Ts:      timestamppb.New(ev.Time),
			Type:    ev.Type,
			Message: ev.Message,
			Fields:  ev.Fields,
		}); err != nil {
			return err
		}
	}

	return nil
}

// kmsgPath is the kernel log device.
const kmsgPath = "/dev/kmsg"

// Dmesg streams the kernel log from /dev/kmsg: everything retained, or
// with tail only what comes next; follow keeps the stream open.
func (m *machineServer) Dmesg(req *machine.DmesgRequest, srv grpc.ServerStreamingServer[common.Data]) error {
	fd, err := unix.Open(kmsgPath, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return status.Errorf(codes.Unavailable, "dmesg: %s cannot be read here (a container without CAP_SYSLOG or /dev/kmsg?): %v", kmsgPath, err)
	}

	if req.GetTail() {
		if _, err := unix.Seek(fd, 0, io.SeekEnd); err != nil {
			unix.Close(fd)
			return status.Errorf(codes.Internal, "dmesg: seek: %v", err)
		}
	}

	// A non-blocking descriptor goes to the runtime poller: reads park
	// instead of blocking a thread, and the call's end can interrupt them.
	f := os.NewFile(uintptr(fd), kmsgPath)
	defer f.Close()

	stop := context.AfterFunc(srv.Context(), func() { f.SetReadDeadline(time.Now()) }) //nolint:errcheck // best effort wake-up
	defer stop()

	rc, err := f.SyscallConn()
	if err != nil {
		return status.Errorf(codes.Internal, "dmesg: %v", err)
	}

	buf := make([]byte, 8192) // a record is at most 8 KiB (LOG_LINE_MAX)

	for {
		n, err := readRecord(rc, buf, req.GetFollow())
		if err != nil {
			if errors.Is(err, io.EOF) || srv.Context().Err() != nil {
				return srv.Context().Err()
			}

			return status.Errorf(codes.Internal, "dmesg: %v", err)
		}

		if line, ok := formatKmsg(buf[:n]); ok {
			if err := srv.Send(&common.Data{Bytes: []byte(line)}); err != nil {
				return err
			}
		}
	}
}

// readRecord reads one kmsg record. Without follow, having nothing left
// to read is the end (io.EOF); with it, the read waits. Records lost to
// the kernel ring wrapping (EPIPE) are skipped.
func readRecord(rc syscall.RawConn, buf []byte, follow bool) (int, error) {
	for {
		var (
			n    int
			rerr error
		)

		err := rc.Read(func(fd uintptr) bool {
			n, rerr = unix.Read(int(fd), buf)

			return !(follow && errors.Is(rerr, unix.EAGAIN))
		})
		if err != nil {
			return 0, err
		}

		switch {
		case errors.Is(rerr, unix.EPIPE):
			continue
		case errors.Is(rerr, unix.EAGAIN):
			return 0, io.EOF
		case rerr != nil:
			return 0, rerr
		}

		return n, nil
	}
}

// formatKmsg turns "pri,seq,usec,flags;message\n continuation" into a
// dmesg-style "[   12.345678] message" line.
func formatKmsg(rec []byte) (string, bool) {
	head, msg, ok := strings.Cut(string(rec), ";")
	if !ok {
		return "", false
	}

	fields := strings.Split(head, ",")
	if len(fields) < 3 {
		return "", false
	}

	usec, err := strconv.ParseUint(fields[2], 10, 64)
	if err != nil {
		return "", false
	}

	msg, _, _ = strings.Cut(msg, "\n") // continuation lines hold key=value metadata

	return fmt.Sprintf("[%12.6f] %s\n", float64(usec)/1e6, msg), true
}
