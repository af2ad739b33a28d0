package bus_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The same notification as BenchmarkWatchLatency, carried the way Talos
// carries it between machined and apid: gRPC over a unix socket. The
// payload is the smallest honest encoding (a 24-byte binary record in a
// BytesValue), so these numbers are a lower bound for that hop.

// notifyMethod is a unary call that decodes the notification and answers
// with nothing.
var notifyMethod = grpc.MethodDesc{
	MethodName: "Notify",
	Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		var in wrapperspb.BytesValue
		if err := dec(&in); err != nil {
			return nil, err
		}

		return &emptypb.Empty{}, nil
	},
}

// watchHandler pushes one message down the stream per trigger value.
func watchHandler(triggers <-chan uint64) grpc.StreamHandler {
	return func(_ any, stream grpc.ServerStream) error {
		var in emptypb.Empty
		if err := stream.RecvMsg(&in); err != nil {
			return err
		}

		for {
			select {
			case <-stream.Context().Done():
				return nil
			case i := <-triggers:
				if err := stream.SendMsg(&wrapperspb.BytesValue{Value: record(i)}); err != nil {
					return err
				}
			}
		}
	}
}

func record(i uint64) []byte {
	b := make([]byte, 24)
	binary.LittleEndian.PutUint64(b, i)      // value
	binary.LittleEndian.PutUint64(b[8:], i)  // version
	binary.LittleEndian.PutUint64(b[16:], 1) // id

	return b
}

func startNotifier(b *testing.B, streams int) (*grpc.ClientConn, []chan uint64) {
	sock := filepath.Join(b.TempDir(), "machined.sock")

	lis, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}

	srv := grpc.NewServer()
	triggers := make([]chan uint64, streams)
	next := make(chan chan uint64, streams)

	for i := range triggers {
		triggers[i] = make(chan uint64, 1)
		next <- triggers[i]
	}

	// Each stream that opens takes the next trigger channel.
	srv.RegisterService(&grpc.ServiceDesc{
		ServiceName: "talosbox.bench.Notifier",
		HandlerType: (*any)(nil),
		Methods:     []grpc.MethodDesc{notifyMethod},
		Streams: []grpc.StreamDesc{{
			StreamName:    "Watch",
			ServerStreams: true,
			Handler: func(srv any, stream grpc.ServerStream) error {
				return watchHandler(<-next)(srv, stream)
			},
		}},
	}, struct{}{})

	go srv.Serve(lis) //nolint:errcheck // stopped below
	b.Cleanup(srv.Stop)

	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}

	b.Cleanup(func() { conn.Close() }) //nolint:errcheck

	return conn, triggers
}

// BenchmarkGRPCUnixNotify: one unary call per notification (the apid to
// machined request hop), timed round trip.
func BenchmarkGRPCUnixNotify(b *testing.B) {
	conn, _ := startNotifier(b, 0)
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)

	b.ReportAllocs()
	b.ResetTimer()

	for i := range b.N {
		start := time.Now()
		if err := conn.Invoke(ctx, "/talosbox.bench.Notifier/Notify", &wrapperspb.BytesValue{Value: record(uint64(i))}, &emptypb.Empty{}); err != nil {
			b.Fatal(err)
		}

		lat = append(lat, time.Since(start))
	}

	b.StopTimer()
	reportPercentiles(b, lat)
}

// BenchmarkGRPCUnixStream: notifications pushed down server streams (the
// machined to apid watch hop), timed from the push until each client holds
// the message, one notification at a time as in BenchmarkWatchLatency.
func BenchmarkGRPCUnixStream(b *testing.B) {
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprintf("watchers=%d", n), func(b *testing.B) {
			benchGRPCStream(b, n)
		})
	}
}

func benchGRPCStream(b *testing.B, watchers int) {
	conn, triggers := startNotifier(b, watchers)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	sent := make([]time.Time, b.N)
	lat := make([][]time.Duration, watchers)
	acks := make(chan struct{}, watchers)
	desc := &grpc.StreamDesc{StreamName: "Watch", ServerStreams: true}

	var wg sync.WaitGroup

	for w := range watchers {
		stream, err := conn.NewStream(ctx, desc, "/talosbox.bench.Notifier/Watch")
		if err != nil {
			b.Fatal(err)
		}

		if err := stream.SendMsg(&emptypb.Empty{}); err != nil {
			b.Fatal(err)
		}

		if err := stream.CloseSend(); err != nil {
			b.Fatal(err)
		}

		lat[w] = make([]time.Duration, 0, b.N)

		wg.Go(func() {
			for {
				var msg wrapperspb.BytesValue
				if err := stream.RecvMsg(&msg); err != nil {
					return
				}

				lat[w] = append(lat[w], time.Since(sent[binary.LittleEndian.Uint64(msg.Value)]))
				acks <- struct{}{}
			}
		})
	}

	b.ReportAllocs()
	b.ResetTimer()

	for i := range b.N {
		sent[i] = time.Now()
		for _, t := range triggers {
			t <- uint64(i)
		}

		for range watchers {
			<-acks
		}
	}

	b.StopTimer()
	cancel()
	wg.Wait()

	reportPercentiles(b, slices.Concat(lat...))
}
